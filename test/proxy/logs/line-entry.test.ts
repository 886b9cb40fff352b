import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { entryOf, recordFromEntry } from '../../../proxy/logs/line-entry.ts';
import { rowOf } from '../../../proxy/logs/log-sql.ts';
import { createGatewayLogger, logRequest } from '../../../proxy/observability/log-line.ts';
import type { RequestRecord } from '../../../proxy/observability/request-record.ts';

// The SQLite store's hand-off reuses the log line: the row stored from (line + additions)
// must be the row stored from the record serialised on its own, for every shape of record.

function lineOf(record: RequestRecord, clientAborted = false): { line: string | undefined; written: string } {
  let written = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      written += chunk.toString();
      done();
    },
  });
  const logger = createGatewayLogger({ destination: destination as never });
  const line = logRequest(logger, record, clientAborted);
  return { line, written };
}

const base: RequestRecord = {
  id: '0f8e2c5a-1111-4222-8333-944445555666',
  traceId: 'trace-1',
  startedAt: 1_764_200_000_123,
  method: 'POST',
  route: '/v1/chat/completions',
  status: 200,
  latencyMs: 12.345678901,
  ttftMs: undefined,
  apiKeyId: undefined,
  workspace: undefined,
  configId: undefined,
  targetPath: undefined,
  provider: 'openai',
  model: 'gpt-4o-mini',
  metadata: undefined,
  promptTokens: undefined,
  completionTokens: undefined,
  totalTokens: undefined,
  cacheStatus: undefined,
  retries: 0,
  guardrailVerdict: undefined,
  errorCode: undefined,
};

const records: Array<[string, RequestRecord, boolean]> = [
  ['minimal', base, false],
  [
    'every field, a fallback story, odd text',
    {
      ...base,
      traceId: 'trace "quoted" \\ \u2028',
      ttftMs: 3.14159265,
      apiKeyId: 'key_1',
      workspace: 'team-a',
      configId: 'cfg',
      targetPath: 'targets[1]',
      modelRequested: 'gpt-4o',
      attempts: [
        { target: 'targets[0]', provider: 'openai', model: 'gpt-4o', status: 503, durationMs: 1.23456789, errorCode: 'AIGW_ERR_UPSTREAM' },
        { target: 'targets[1]', provider: 'openai', model: 'gpt-4o-mini', status: 200, durationMs: 2.5, errorCode: undefined },
      ],
      metadata: { user: 'ünï \ud800 lone', nested: { a: [1, 2] }, '': 'empty key' },
      promptTokens: 10,
      completionTokens: 5,
      totalTokens: 15,
      cachedTokens: 2,
      reasoningTokens: 1,
      usageEstimated: true,
      costUsd: 0.000012345,
      otelTraceId: '0af7651916cd43dd8448eb211c80319c',
      cacheStatus: 'MISS',
      retries: 2,
      guardrailVerdict: 'pass',
      errorCode: 'AIGW_ERR_X',
    },
    true,
  ],
  ['one attempt, model requested = model, NaN cost', { ...base, modelRequested: 'gpt-4o-mini', attempts: [{ target: 'root', provider: 'openai', model: 'gpt-4o-mini', status: 200, durationMs: 1, errorCode: undefined }], costUsd: Number.NaN }, false],
  ['a skipped target', { ...base, attempts: [{ target: 'targets[0]', provider: '@gone', model: undefined, status: null, durationMs: 0, errorCode: 'AIGW_ERR_MISSING_PROVIDER', skipped: 'unresolved' }] }, false],
];

for (const [name, record, aborted] of records) {
  test(`line entry: ${name} — the same stored row as the record serialised alone`, () => {
    const { line, written } = lineOf(record, aborted);
    assert.ok(line !== undefined);
    // The log line's bytes are the returned string closed.
    assert.equal(written, `${line}}\n`);
    const fromLine = recordFromEntry(JSON.parse(entryOf(record, line)) as RequestRecord);
    const alone = recordFromEntry(JSON.parse(entryOf(record, undefined)) as RequestRecord);
    assert.deepEqual(rowOf(fromLine), rowOf(alone));
    assert.deepEqual(rowOf(fromLine), rowOf(JSON.parse(JSON.stringify(record)) as RequestRecord));
  });
}

test('line entry: info logging off — no line, the record goes as itself', () => {
  const logger = createGatewayLogger({ level: 'warn', destination: new Writable({ write: (_c, _e, done) => done() }) as never });
  assert.equal(logRequest(logger, base, false), undefined);
  assert.equal(entryOf(base, undefined), JSON.stringify(base));
});
