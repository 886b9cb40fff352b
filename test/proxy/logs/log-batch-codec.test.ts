// The SQLite store's hand-off encoding stores what the JSON text it replaced stored: same rows.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeBatch, transferablesOf } from '../../../proxy/logs/log-batch-codec.ts';
import { decodeBatch } from './decode-batch.ts';
import { valuesOfBatch } from '../../../proxy/logs/log-batch-rows.ts';
import { LOG_COLUMNS, rowOf, valuesOf, type LogColumn } from '../../../proxy/logs/log-sql.ts';
import type { RequestRecord } from '../../../proxy/observability/request-record.ts';
import { logRecord } from './request-log-store-suite.ts';

const viaJson = (records: RequestRecord[]): unknown[] => (JSON.parse(JSON.stringify(records)) as RequestRecord[]).map(rowOf);
const viaCodec = (records: RequestRecord[]): unknown[] => {
  const batch = encodeBatch(records);
  // What the worker receives: a structured clone with the buffers moved.
  return decodeBatch(structuredClone(batch, { transfer: transferablesOf(batch) })).map(rowOf);
};
/** What the worker inserts: the values straight from the batch. */
const viaRows = (records: RequestRecord[]): unknown[] => {
  const batch = encodeBatch(records);
  return valuesOfBatch(structuredClone(batch, { transfer: transferablesOf(batch) }));
};
const valuesViaJson = (records: RequestRecord[]): unknown[] => (viaJson(records) as Array<Parameters<typeof valuesOf>[0]>).map(valuesOf);

test('every field, the odd values included, stores as the JSON hand-off stored it', () => {
  const records: RequestRecord[] = [
    logRecord(),
    logRecord({
      ttftMs: 3.25,
      configId: 'cfg',
      targetPath: 'config.targets[1]',
      modelRequested: 'asked',
      metadata: { user: 'u1', n: 42, nested: { a: [1, 'x', null] }, gone: undefined, odd: 'a\u0000b\uD800' },
      promptTokens: 12,
      completionTokens: 9,
      totalTokens: 21,
      cachedTokens: 0,
      reasoningTokens: 4,
      usageEstimated: true,
      costUsd: 0.0000072,
      otelTraceId: '0af7651916cd43dd8448eb211c80319c',
      cacheStatus: 'MISS',
      retries: 2,
      guardrailVerdict: 'pass',
      errorCode: 'AIGW_ERR_X',
      attempts: [
        { target: 'config.targets[0]', provider: 'openai', model: 'm', status: 502, durationMs: 3.2500004, errorCode: 'AIGW_ERR_UPSTREAM_UNREACHABLE' },
        { target: 'config.targets[1]', provider: undefined, model: undefined, status: null, durationMs: Number.NaN, errorCode: undefined, skipped: 'circuit_open' },
        { target: 'config.targets[1]', provider: 'openai', model: 'm', status: Number.POSITIVE_INFINITY, durationMs: -0, errorCode: undefined },
      ],
    }),
    logRecord({ usageEstimated: false, attempts: [], metadata: {}, latencyMs: -0, ttftMs: Number.NaN, costUsd: Number.POSITIVE_INFINITY, promptTokens: 1.6 }),
    logRecord({ id: 'id-\uD83D\uDE00-\u0000', traceId: 'tr\uDC00ace', route: '/v1/embeddings', provider: 'anthropic', workspace: undefined, apiKeyId: undefined }),
    logRecord({ status: Number.NaN, retries: Number.NaN }),
    logRecord({
      metadata: { 'k"\\u': 'v\\u0041', esc: 'tab\there', emoji: '\uD83D\uDE00', list: [1, -0, 1e21, 'é'], '2': 'int key first' },
      attempts: [{ target: 'a\uD800', provider: 'p"q', model: undefined, status: -0.4, durationMs: 1e306, errorCode: 'E\u0000', skipped: 'unresolved' }],
      startedAt: Number.NaN,
      latencyMs: Number.POSITIVE_INFINITY,
      totalTokens: -0.2,
    }),
  ];
  assert.deepEqual(viaCodec(records), viaJson(records));
  // Straight to the insert's values: the very values (and JSON texts) the way through records binds.
  assert.deepEqual(viaRows(records), valuesViaJson(records));
});

test('a batch with a record missing a required text or an attempt target fails as the way through records did', () => {
  const broken = [logRecord({ route: undefined as unknown as string })];
  assert.throws(() => valuesViaJson(broken), TypeError);
  assert.throws(() => viaRows(broken), TypeError);
  const noTarget = [logRecord({ attempts: [{ target: undefined as unknown as string, status: 200, durationMs: 1, provider: undefined, model: undefined, errorCode: undefined }] })];
  assert.throws(() => valuesViaJson(noTarget), TypeError);
  assert.throws(() => viaRows(noTarget), TypeError);
});

test('repeated strings are sent once a batch; a batch of many records round-trips', () => {
  const records = Array.from({ length: 300 }, (_, i) =>
    logRecord({ provider: i % 2 === 0 ? 'openai' : 'anthropic', attempts: [{ target: 'config', provider: 'openai', model: 'gpt-4o-mini', status: 200, durationMs: i / 7, errorCode: undefined }] }),
  );
  const batch = encodeBatch(records);
  // id and trace id per record, and a handful of shared values.
  assert.ok(batch.strings.length < records.length * 2 + 20, `${batch.strings.length} strings`);
  assert.deepEqual(viaCodec(records), viaJson(records));
  assert.deepEqual(viaRows(records), valuesViaJson(records));
});

test('a malformed batch is refused, not misread', () => {
  const batch = encodeBatch([logRecord()]);
  assert.throws(() => decodeBatch({ ...batch, count: 2 }), /malformed/);
  assert.throws(() => decodeBatch({ ...batch, attemptNumbers: new Float64Array(3) }), /malformed/);
  assert.throws(() => valuesOfBatch({ ...batch, count: 2 }), /malformed/);
  assert.throws(() => valuesOfBatch({ ...batch, attemptNumbers: new Float64Array(3) }), /malformed/);
});

test('the insert binds every column in LOG_COLUMNS order', () => {
  const row = Object.fromEntries(LOG_COLUMNS.map((column) => [column, `value of ${column}`])) as Record<LogColumn, unknown>;
  assert.deepEqual(valuesOf(row), LOG_COLUMNS.map((column) => `value of ${column}`));
});
