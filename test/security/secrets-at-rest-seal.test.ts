// The seal of batch credentials: AES-256-GCM bound to the batch id; a wrong key, another
// batch's id or a changed byte never opens; the standalone key file is created once, 0600.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { BatchCredentialSeal, SECRET_KEY_FILE } from '../../proxy/batches/batch-credential-seal.ts';

const HEADERS = { 'x-gateway-api-key': 'gw-sealed-gateway-key-0123456789abcdef', authorization: 'Bearer sk-sealed-provider' };

describe('batch credential seal', () => {
  test('round trip; the sealed text holds no secret', () => {
    const seal = new BatchCredentialSeal(randomBytes(32));
    const sealed = seal.seal('gwbatch-1', HEADERS);
    assert.ok(!sealed.includes('gw-sealed') && !sealed.includes('sk-sealed'));
    assert.deepEqual(seal.open('gwbatch-1', sealed), HEADERS);
    assert.notEqual(seal.seal('gwbatch-1', HEADERS), sealed, 'a fresh IV every time');
  });

  test('another key, another batch id or a flipped byte does not open', () => {
    const seal = new BatchCredentialSeal(randomBytes(32));
    const sealed = seal.seal('gwbatch-1', HEADERS);
    assert.equal(new BatchCredentialSeal(randomBytes(32)).open('gwbatch-1', sealed), undefined);
    assert.equal(seal.open('gwbatch-2', sealed), undefined);
    const raw = Buffer.from(sealed.slice(sealed.lastIndexOf(':') + 1), 'base64');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    assert.equal(seal.open('gwbatch-1', sealed.slice(0, sealed.lastIndexOf(':') + 1) + raw.toString('base64')), undefined);
    assert.deepEqual(seal.open('gwbatch-1', ''), {}, 'a wiped value is no credentials');
  });

  test('AIGATEWAY_SECRET_KEY shorter than 32 characters is refused', () => {
    assert.throws(() => BatchCredentialSeal.fromSecret('too-short'), /at least 32 characters/);
    const a = BatchCredentialSeal.fromSecret('x'.repeat(16) + 'shared-secret-0123456789');
    const b = BatchCredentialSeal.fromSecret('x'.repeat(16) + 'shared-secret-0123456789');
    assert.deepEqual(b.open('id', a.seal('id', HEADERS)), HEADERS, 'replicas with the same secret open each other');
  });

  test('the standalone key file is generated once, mode 0600, and reused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'aigw-seal-'));
    try {
      const first = BatchCredentialSeal.fromKeyFile(dir);
      const key = await readFile(join(dir, SECRET_KEY_FILE), 'utf8');
      assert.equal((await stat(join(dir, SECRET_KEY_FILE))).mode & 0o777, 0o600);
      const again = BatchCredentialSeal.fromKeyFile(dir);
      assert.equal(await readFile(join(dir, SECRET_KEY_FILE), 'utf8'), key);
      assert.deepEqual(again.open('id', first.seal('id', HEADERS)), HEADERS);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
