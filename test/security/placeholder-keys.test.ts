// Finding 12 (gateway side): keys copied from examples (`sk-replace-me`, a placeholder
// gateway key with the admin scope) or short gateway keys are refused at start-up and on
// reload (the last good state keeps serving). `npm start`'s generated key passes.
import assert from 'node:assert/strict';
import { randomBytes, createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dump } from 'js-yaml';
import { pino } from 'pino';
import { loadStateFromFiles, loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { startGateway } from '../../proxy/start-gateway.ts';
import { StateLoadError } from '../../proxy/errors.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

function errorsOf(state: string, credentials?: string): string[] {
  const loaded = loadStateFromTexts({ state, credentials }, {}, BUILTIN_GUARDRAIL_COMPILER);
  return loaded.ok ? [] : loaded.errors;
}

describe('placeholder and short keys are refused', () => {
  test('a provider apiKey with a placeholder marker, in the state or the credentials', () => {
    for (const key of ['sk-replace-me', 'sk-REPLACE_ME-please', 'changeme', 'sk-placeholder-0000', 'your-api-key', '<your key here>']) {
      const errors = errorsOf(`apiKeys: []\nproviders:\n  - { slug: p, provider: openai, apiKey: "${key}" }\n`);
      assert.match(errors.join('\n'), /providers\[0\]\.apiKey: looks like a placeholder/, key);
    }
    const fromSecret = errorsOf('apiKeys: []\nproviders:\n  - { slug: p, provider: openai }\n', 'providers:\n  p: { apiKey: sk-replace-me }\n');
    assert.match(fromSecret.join('\n'), /credentials: providers\.p\.apiKey: looks like a placeholder/);
  });

  test('a gateway key with a marker (however long), or shorter than 32 characters', () => {
    const placeholder = errorsOf('apiKeys:\n  - { id: admin, key: gw-replace-me-with-a-long-random-value, scopes: [admin] }\n');
    assert.match(placeholder.join('\n'), /apiKeys\[0\]\.key: looks like a placeholder/);
    const short = errorsOf('apiKeys:\n  - { id: a, key: gw-0123456789abcdef }\n');
    assert.match(short.join('\n'), /apiKeys\[0\]\.key: must be at least 32 characters/);
    const shortSecret = errorsOf('apiKeys:\n  - { id: a }\n', 'apiKeys:\n  a: { key: short-key-0000 }\n');
    assert.match(shortSecret.join('\n'), /credentials: apiKeys\.a\.key: must be at least 32 characters/);
  });

  test('sha256: hashed gateway keys, long random keys and an empty provider key are fine', () => {
    const hash = createHash('sha256').update('whatever').digest('hex');
    assert.deepEqual(errorsOf(`apiKeys:\n  - { id: h, keyHash: "sha256:${hash}" }\n  - { id: r, key: ${randomBytes(24).toString('base64url')} }\nproviders:\n  - { slug: p, provider: openai, apiKey: "" }\n`), []);
  });

  test("npm start's state with the key it generates (gw- + 24 random bytes) loads", async () => {
    const generated = `gw-${randomBytes(24).toString('base64url')}`;
    assert.ok(generated.length >= 32);
    const loaded = await loadStateFromFiles({ statePath: new URL('../../gateway.example.yaml', import.meta.url).pathname }, { GATEWAY_API_KEY: generated }, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('; '));
  });

  test('start-up refuses a placeholder gateway key with a clear error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'aigw-placeholder-'));
    try {
      const statePath = join(dir, 'gateway.yaml');
      await writeFile(statePath, dump({ apiKeys: [{ id: 'admin', key: 'gw-changeme-changeme-changeme-changeme', scopes: ['admin'] }] }));
      await assert.rejects(
        startGateway({ sources: { statePath }, env: {}, logger: pino({ level: 'silent' }) }),
        (error: unknown) => error instanceof StateLoadError && /apiKeys\[0\]\.key: looks like a placeholder/.test(error.message),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('on reload', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: baseState(), reloadIntervalMs: 60_000 });
  });
  after(() => harness.close());

  test('a state adding sk-replace-me is refused; the last good state keeps serving and the failure is counted', async () => {
    const failures = async () => (await harness.gateway.metrics.configReloads.get()).values.find((v) => v.labels['result'] === 'failure')?.value ?? 0;
    const before = await failures();
    await harness.writeState(baseState({ providers: [{ slug: 'openai', provider: 'openai', apiKey: 'sk-replace-me' }] }));
    await harness.gateway.watcher.check();
    assert.equal(await failures(), before + 1);
    assert.equal(harness.gateway.server.currentState().providersBySlug.has('openai'), false);
    const response = await fetch(`${harness.gateway.url}/policies/rate-limits`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
    assert.equal(response.status, 200);
    assert.match(harness.logText(), /providers\[0\]\.apiKey: looks like a placeholder/);
    assert.ok(!harness.logText().includes('sk-replace-me'), 'the refused key is not echoed in the log');
  });
});
