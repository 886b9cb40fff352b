// One contract, two stores: the SQLite (standalone) and PostgreSQL (replicas) batch and
// file stores run the same assertions — files, validation, claiming, orphan recovery,
// finalization, cancel, expiry and listing.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { INTERRUPTED_LINE_CODE, responseLine } from '../../proxy/batches/batch-output.ts';
import { newGatewayBatchId, type BatchStore, type NewBatch } from '../../proxy/batches/batch-store.ts';
import { SqlBatchStore } from '../../proxy/batches/sql-batch-store.ts';
import { newGatewayFileId, type FileStore } from '../../proxy/files/file-store.ts';
import { SqlFileStore } from '../../proxy/files/sql-file-store.ts';
import { postgresBackend, sqliteBackend, type Backend, type ProvisionedDatabase } from './store-backends.ts';

const WS = 'default';
const T0 = 1_750_000_000_000;

function chatLine(customId: string, url = '/v1/chat/completions'): string {
  return JSON.stringify({ custom_id: customId, method: 'POST', url, body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: customId }] } });
}

async function upload(files: FileStore, text: string, purpose = 'batch', chunkSize = 7): Promise<string> {
  const id = newGatewayFileId();
  await files.beginUpload({ id, workspace: WS, createdMs: T0 });
  const data = Buffer.from(text);
  let seq = 0;
  for (let offset = 0; offset < data.length; offset += chunkSize) await files.appendChunk(id, seq++, data.subarray(offset, offset + chunkSize));
  await files.completeUpload(id, { purpose, filename: 'input.jsonl', bytes: data.length });
  return id;
}

async function readAll(files: FileStore, id: string): Promise<string> {
  const parts: Buffer[] = [];
  for await (const chunk of files.readContent(id)) parts.push(chunk);
  return Buffer.concat(parts).toString('utf8');
}

function newBatch(inputFileId: string, extra: Partial<NewBatch> = {}): NewBatch {
  return {
    id: newGatewayBatchId(),
    workspace: WS,
    endpoint: '/v1/chat/completions',
    inputFileId,
    metadata: { job: 'nightly' },
    headers: { 'x-gateway-api-key': 'k', 'x-gateway-config': 'fb' },
    createdMs: T0,
    expiresAt: T0 / 1000 + 86_400,
    ...extra,
  };
}

const ok = (customId: string) => ({ succeeded: true, resultLine: responseLine(customId, { statusCode: 200, requestId: 'r', bodyText: '{"ok":true}' }) });

for (const make of [sqliteBackend, postgresBackend]) {
  const backend: Backend = await make();
  describe(`batch store contract — ${backend.name}`, { skip: backend.unavailable }, () => {
    let database: ProvisionedDatabase;
    let batches: BatchStore;
    let files: FileStore;

    before(async () => {
      database = await backend.provision();
      const driver = database.connect();
      batches = await SqlBatchStore.open(driver);
      files = new SqlFileStore(driver);
    });
    after(async () => {
      await batches.close();
      await database.cleanup();
    });

    test('an upload is invisible until complete, then readable chunk by chunk, listable and deletable', async () => {
      const id = newGatewayFileId();
      await files.beginUpload({ id, workspace: WS, createdMs: T0 });
      assert.equal(await files.get(WS, id), undefined);
      await files.appendChunk(id, 0, Buffer.from('héllo '));
      await files.appendChunk(id, 1, Buffer.from('world'));
      const record = await files.completeUpload(id, { purpose: 'batch', filename: 'a.jsonl', bytes: 12 });
      assert.deepEqual({ ...record }, { id, workspace: WS, purpose: 'batch', filename: 'a.jsonl', bytes: 12, createdAt: T0 / 1000 });
      assert.equal(await readAll(files, id), 'héllo world');
      assert.equal(await files.get('other-workspace', id), undefined);
      const other = await upload(files, 'x', 'batch');
      const page = await files.list(WS, { after: undefined, limit: 1, order: 'desc', purpose: 'batch' });
      assert.equal(page.items.length, 1);
      assert.equal(page.hasMore, true);
      const next = await files.list(WS, { after: page.items[0]?.id, limit: 100, order: 'desc', purpose: 'batch' });
      assert.ok(!next.items.some((file) => file.id === page.items[0]?.id));
      assert.ok([...page.items, ...next.items].some((file) => file.id === other));
      assert.equal(await files.delete(WS, id), true);
      assert.equal(await files.delete(WS, id), false);
      assert.equal(await readAll(files, id), '');
    });

    test('validation turns the input file into lines (in_progress) and counts them', async () => {
      const fileId = await upload(files, `${chatLine('a')}\n${chatLine('b')}\n\n${chatLine('c')}\n`);
      const created = await batches.create(newBatch(fileId));
      assert.equal(created.status, 'validating');
      assert.deepEqual(created.metadata, { job: 'nightly' });
      await drainValidation(batches);
      const batch = await batches.get(WS, created.id);
      assert.equal(batch?.status, 'in_progress');
      assert.equal(batch?.inProgressAt, T0 / 1000);
      assert.deepEqual(batch?.requestCounts, { total: 3, completed: 0, failed: 0 });
      await runAll(batches, 'w1');
    });

    test('a file with bad lines fails the batch with errors naming each line', async () => {
      const text = [chatLine('a'), 'not json', chatLine('a'), chatLine('d', '/v1/embeddings'), '{"custom_id":"e","method":"GET","url":"/v1/chat/completions","body":{}}'].join('\n');
      const created = await batches.create(newBatch(await upload(files, text)));
      await drainValidation(batches);
      const batch = await batches.get(WS, created.id);
      assert.equal(batch?.status, 'failed');
      assert.equal(batch?.failedAt, T0 / 1000);
      assert.deepEqual(
        batch?.errors?.map((error) => [error.line, error.code, error.param]),
        [
          [2, 'invalid_json_line', null],
          [3, 'duplicate_custom_id', 'custom_id'],
          [4, 'mismatched_endpoint', 'url'],
          [5, 'invalid_request', 'method'],
        ],
      );
      assert.deepEqual(await batches.claimLines('w1', T0, 10), []);
    });

    test('a missing input file fails the batch', async () => {
      const created = await batches.create(newBatch('gwfile-missing'));
      await drainValidation(batches);
      const batch = await batches.get(WS, created.id);
      assert.equal(batch?.status, 'failed');
      assert.equal(batch?.errors?.[0]?.param, 'input_file_id');
    });

    test('concurrent claims never hand one line to two workers; outcomes count once', async () => {
      const lines = Array.from({ length: 40 }, (_, i) => chatLine(`c${i}`)).join('\n');
      const created = await batches.create(newBatch(await upload(files, lines, 'batch', 1000)));
      await drainValidation(batches);
      const claims = await Promise.all(['w1', 'w2', 'w3', 'w4'].map((worker) => batches.claimLines(worker, T0, 15)));
      const claimed = claims.flat().filter((line) => line.batchId === created.id);
      assert.equal(claimed.length, 40);
      assert.equal(new Set(claimed.map((line) => line.customId)).size, 40);
      assert.deepEqual(claimed[0]?.headers, { 'x-gateway-api-key': 'k', 'x-gateway-config': 'fb' });
      for (const [index, claim] of claims.entries()) {
        for (const line of claim) assert.equal(await batches.finishLine(`w${index + 1}`, line, ok(line.customId)), true);
      }
      const line = claimed[0];
      assert.ok(line !== undefined);
      assert.equal(await batches.finishLine('w1', line, ok(line.customId)), false, 'a finished line is not recorded twice');
      assert.deepEqual((await batches.get(WS, created.id))?.requestCounts, { total: 40, completed: 40, failed: 0 });
      assert.deepEqual(await batches.finalizeReady(T0, 10), [created.id]);
    });

    test('lines of a dead worker fail as interrupted and are never claimed again', async () => {
      const created = await batches.create(newBatch(await upload(files, [chatLine('x1'), chatLine('x2'), chatLine('x3')].join('\n'))));
      await drainValidation(batches);
      await batches.heartbeat('dead', T0);
      const claimed = await batches.claimLines('dead', T0, 2);
      assert.equal(claimed.length, 2);
      await batches.heartbeat('alive', T0 + 60_000);
      assert.equal(await batches.failOrphanedLines(T0 - 1, 100), 0, 'a fresh heartbeat keeps the claim');
      assert.equal(await batches.failOrphanedLines(T0 + 30_000, 100), 2);
      const first = claimed[0];
      assert.ok(first !== undefined);
      assert.equal(await batches.finishLine('dead', first, ok(first.customId)), false, 'the dead worker lost its claim');
      const rest = await batches.claimLines('alive', T0 + 60_000, 10);
      assert.deepEqual(rest.map((line) => line.customId), ['x3']);
      for (const line of rest) await batches.finishLine('alive', line, ok(line.customId));
      await batches.finalizeReady(T0 + 60_000, 10);
      const batch = await batches.get(WS, created.id);
      assert.equal(batch?.status, 'completed');
      assert.deepEqual(batch?.requestCounts, { total: 3, completed: 1, failed: 2 });
      assert.ok(batch?.errorFileId !== null && batch?.errorFileId !== undefined);
      const errors = (await readAll(files, batch.errorFileId)).trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
      assert.deepEqual(errors.map((line) => [line['custom_id'], (line['error'] as { code: string }).code, line['response']]), [
        ['x1', INTERRUPTED_LINE_CODE, null],
        ['x2', INTERRUPTED_LINE_CODE, null],
      ]);
    });

    test('standalone start forgets every other worker, so their claims fail at once', async () => {
      const created = await batches.create(newBatch(await upload(files, chatLine('s1'))));
      await drainValidation(batches);
      await batches.heartbeat('previous-process', T0 + 100_000);
      assert.equal((await batches.claimLines('previous-process', T0, 5)).length, 1);
      await batches.forgetOtherWorkers('me');
      assert.equal(await batches.failOrphanedLines(T0, 100), 1);
      await batches.finalizeReady(T0, 10);
      assert.equal((await batches.get(WS, created.id))?.status, 'completed');
    });

    test('a released line goes back to the queue', async () => {
      const created = await batches.create(newBatch(await upload(files, chatLine('r1'))));
      await drainValidation(batches);
      const [line] = await batches.claimLines('w1', T0, 5);
      assert.ok(line !== undefined);
      await batches.releaseLine('w1', line);
      const again = await batches.claimLines('w2', T0, 5);
      assert.deepEqual(again.map((l) => l.customId), ['r1']);
      for (const l of again) await batches.finishLine('w2', l, ok(l.customId));
      await batches.finalizeReady(T0, 10);
      assert.equal((await batches.get(WS, created.id))?.status, 'completed');
    });

    test('finalization writes output and error files in line order and completes once', async () => {
      const lines = Array.from({ length: 12 }, (_, i) => chatLine(`f${i}`)).join('\n');
      const created = await batches.create(newBatch(await upload(files, lines)));
      await drainValidation(batches);
      const claimed = await batches.claimLines('w1', T0, 100);
      for (const line of claimed.reverse()) {
        const failed = line.lineNo % 4 === 0;
        await batches.finishLine('w1', line, {
          succeeded: !failed,
          resultLine: responseLine(line.customId, { statusCode: failed ? 400 : 200, requestId: 'r', bodyText: failed ? '{"error":{}}' : '{}' }),
        });
      }
      const [a, b] = await Promise.all([batches.finalizeReady(T0 + 5_000, 10), batches.finalizeReady(T0 + 5_000, 10)]);
      assert.deepEqual([...(a ?? []), ...(b ?? [])].filter((id) => id === created.id), [created.id], 'exactly one finalizer wins');
      const batch = await batches.get(WS, created.id);
      assert.equal(batch?.status, 'completed');
      assert.equal(batch?.finalizingAt, T0 / 1000 + 5);
      assert.equal(batch?.completedAt, T0 / 1000 + 5);
      assert.deepEqual(batch?.requestCounts, { total: 12, completed: 9, failed: 3 });
      const output = (await readAll(files, batch?.outputFileId ?? '')).trim().split('\n').map((line) => (JSON.parse(line) as { custom_id: string }).custom_id);
      const errors = (await readAll(files, batch?.errorFileId ?? '')).trim().split('\n').map((line) => (JSON.parse(line) as { custom_id: string }).custom_id);
      assert.deepEqual(errors, ['f3', 'f7', 'f11']);
      assert.deepEqual(output, ['f0', 'f1', 'f2', 'f4', 'f5', 'f6', 'f8', 'f9', 'f10']);
      const outputFile = await files.get(WS, batch?.outputFileId ?? '');
      assert.equal(outputFile?.purpose, 'batch_output');
    });

    test('cancel stops new lines and ends in cancelled; a completed batch cannot be cancelled', async () => {
      const created = await batches.create(newBatch(await upload(files, [chatLine('k1'), chatLine('k2'), chatLine('k3')].join('\n'))));
      await drainValidation(batches);
      const [line] = await batches.claimLines('w1', T0, 1);
      assert.ok(line !== undefined);
      const cancel = await batches.cancel(WS, created.id, T0 + 2_000);
      assert.equal(cancel.kind, 'cancelling');
      assert.equal(cancel.kind === 'cancelling' ? cancel.batch.cancellingAt : 0, T0 / 1000 + 2);
      assert.deepEqual(await batches.claimLines('w1', T0, 10), []);
      assert.deepEqual(await batches.finalizeReady(T0 + 3_000, 10), [], 'waits for the line in flight');
      await batches.finishLine('w1', line, ok(line.customId));
      await batches.finalizeReady(T0 + 3_000, 10);
      const batch = await batches.get(WS, created.id);
      assert.equal(batch?.status, 'cancelled');
      assert.equal(batch?.cancelledAt, T0 / 1000 + 3);
      assert.deepEqual(batch?.requestCounts, { total: 3, completed: 1, failed: 0 });
      assert.equal((await batches.cancel(WS, created.id, T0)).kind, 'cancelling', 'cancelling again returns the batch');
      assert.equal((await batches.cancel(WS, 'gwbatch-nope', T0)).kind, 'not-found');
      const done = await batches.create(newBatch(await upload(files, chatLine('z'))));
      await drainValidation(batches);
      await runAll(batches, 'w1');
      assert.equal((await batches.cancel(WS, done.id, T0)).kind, 'not-cancellable');
    });

    test('a batch past expires_at starts no more lines and ends expired', async () => {
      const created = await batches.create(newBatch(await upload(files, [chatLine('e1'), chatLine('e2')].join('\n')), { expiresAt: T0 / 1000 + 10 }));
      await drainValidation(batches);
      const [line] = await batches.claimLines('w1', T0, 1);
      assert.ok(line !== undefined);
      await batches.finishLine('w1', line, ok(line.customId));
      assert.deepEqual(await batches.claimLines('w1', T0 + 11_000, 10), []);
      await batches.finalizeReady(T0 + 11_000, 10);
      const batch = await batches.get(WS, created.id);
      assert.equal(batch?.status, 'expired');
      assert.equal(batch?.expiredAt, T0 / 1000 + 11);
      assert.ok(batch?.outputFileId !== null);
    });

    test('lists newest first with an after cursor, per workspace', async () => {
      const fileId = await upload(files, chatLine('l'));
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await batches.create(newBatch(fileId, { createdMs: T0 + 1_000_000 + i }))).id);
      const first = await batches.list(WS, { after: undefined, limit: 2 });
      assert.deepEqual(first.items.map((b) => b.id), [ids[4], ids[3]]);
      assert.equal(first.hasMore, true);
      const second = await batches.list(WS, { after: ids[3], limit: 2 });
      assert.deepEqual(second.items.map((b) => b.id), [ids[2], ids[1]]);
      assert.deepEqual((await batches.list('elsewhere', { after: undefined, limit: 10 })).items, []);
      await drainValidation(batches);
      await runAll(batches, 'w1');
    });
  });
}

async function drainValidation(store: BatchStore): Promise<void> {
  for (let i = 0; i < 50; i++) if ((await store.validateNext(T0)) === undefined) return;
  throw new Error('validation did not drain');
}

async function runAll(store: BatchStore, worker: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    const lines = await store.claimLines(worker, T0, 100);
    if (lines.length === 0) break;
    for (const line of lines) await store.finishLine(worker, line, ok(line.customId));
  }
  await store.finalizeReady(T0, 100);
}
