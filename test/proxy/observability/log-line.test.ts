import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import { pino } from 'pino';
import type { RequestRecord } from '../../../proxy/observability/request-record.ts';
import { createGatewayLogger, logRequest } from '../../../proxy/observability/log-line.ts';

// The file logger batches lines before sonic-boom; whatever the batching, every line must
// reach the file whole, in the order it was logged, once the logger is flushed.

function record(index: number): RequestRecord {
  return {
    traceId: `trace-${index}`,
    method: 'POST',
    route: '/v1/chat/completions',
    status: 200,
    latencyMs: 1.5,
    retries: 0,
    model: 'gpt-4o-mini',
    modelRequested: 'gpt-4o-mini',
  } as unknown as RequestRecord;
}

test('request lines and other log lines reach the file whole and in order after flush', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'aigw-log-line-'));
  try {
    const path = join(dir, 'requests.log');
    const logger = createGatewayLogger({ destination: path });
    // Enough lines to cross the 56 KiB batch several times, with pino's own lines between.
    for (let index = 0; index < 2500; index++) {
      logRequest(logger, record(index), false);
      if (index % 100 === 50) logger.warn({ index }, 'between');
    }
    await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const expected: string[] = [];
    for (let index = 0; index < 2500; index++) {
      expected.push(`trace-${index}`);
      if (index % 100 === 50) expected.push(`warn-${index}`);
    }
    assert.deepEqual(
      lines.map((line) => (line['msg'] === 'between' ? `warn-${String(line['index'])}` : String(line['trace_id']))),
      expected,
    );
    assert.equal(lines[0]?.['status'], 200);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// The line is written straight to bytes; it must stay what serialising each field with
// JSON.stringify made (the format before, and what readers of the log parse).
function referenceLine(record: RequestRecord, clientAborted: boolean): string {
  const text = (name: string, value: string | undefined) => (value === undefined ? '' : `,"${name}":${JSON.stringify(value)}`);
  const count = (name: string, value: number | undefined) => (value === undefined ? '' : `,"${name}":${Number.isFinite(value) ? value : null}`);
  const ms = (value: number) => Math.round(value * 1000) / 1000;
  let line = `{"level":30,"trace_id":${JSON.stringify(record.traceId)},"method":${JSON.stringify(record.method)},"route":${JSON.stringify(record.route)}`;
  line += `,"status":${record.status},"latency_ms":${ms(record.latencyMs)}`;
  line += text('api_key_id', record.apiKeyId) + text('workspace', record.workspace) + text('config_id', record.configId);
  line += text('provider', record.provider) + text('model', record.model) + text('target', record.targetPath);
  if (record.modelRequested !== record.model) line += text('model_requested', record.modelRequested);
  line += `,"retries":${record.retries}`;
  if (record.ttftMs !== undefined) line += `,"ttft_ms":${ms(record.ttftMs)}`;
  line += count('prompt_tokens', record.promptTokens) + count('completion_tokens', record.completionTokens) + count('total_tokens', record.totalTokens);
  line += count('cached_tokens', record.cachedTokens) + count('reasoning_tokens', record.reasoningTokens);
  if (record.usageEstimated !== undefined) line += `,"usage_estimated":${record.usageEstimated}`;
  line += count('cost_usd', record.costUsd) + text('otel_trace_id', record.otelTraceId) + text('cache_status', record.cacheStatus) + text('guardrail_verdict', record.guardrailVerdict);
  if (record.metadata !== undefined) line += `,"metadata":${JSON.stringify(record.metadata)}`;
  line += text('error_code', record.errorCode);
  const attempts = record.attempts;
  if (attempts !== undefined && (attempts.length > 1 || attempts[0]?.skipped !== undefined)) {
    line += `,"attempts":${JSON.stringify(attempts.map(({ durationMs, errorCode, ...rest }) => ({ ...rest, duration_ms: ms(durationMs), error_code: errorCode })))}`;
  }
  return `${line}${clientAborted ? ',"client_aborted":true' : ''},"msg":"request"}\n`;
}

const withoutTime = (line: string) => line.replace(/,"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"/, '');
const hostileText = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.constantFrom('a"b', 'a\\b', '\u007f', '\u0000\n\t', '\ud800', 'é', '😀', 'x'.repeat(5000)));
const maybe = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: undefined });
const aNumber = fc.oneof(fc.double(), fc.nat(), fc.constantFrom(Number.NaN, Infinity, -0, 1e21, 1e-7));
const aRecord = fc.record({
  traceId: hostileText, method: hostileText, route: hostileText, status: fc.integer({ min: 100, max: 599 }), latencyMs: fc.oneof(fc.double({ min: 0, max: 1e6, noNaN: true }), fc.double({ min: 1e8, max: 1e11 }), fc.constantFrom(-0, 0.0004999, 0.0005, 999.9995, 1e9 - 0.0004, 1e9, 2 ** 53)),
  ttftMs: maybe(fc.double({ min: 0, max: 1e6, noNaN: true })), apiKeyId: maybe(hostileText), workspace: maybe(hostileText), configId: maybe(hostileText),
  targetPath: maybe(hostileText), provider: maybe(hostileText), model: maybe(hostileText), modelRequested: maybe(hostileText),
  attempts: maybe(fc.array(fc.record({ target: hostileText, provider: maybe(hostileText), model: maybe(hostileText), status: fc.oneof(fc.constant(null), fc.nat(599)), durationMs: fc.double({ min: 0, max: 1e5, noNaN: true }), errorCode: maybe(hostileText), skipped: maybe(fc.constantFrom('circuit_open' as const, 'unresolved' as const)) }), { maxLength: 3 })),
  metadata: maybe(fc.dictionary(hostileText, fc.jsonValue({ maxDepth: 2 }))), promptTokens: maybe(aNumber), completionTokens: maybe(aNumber), totalTokens: maybe(aNumber),
  cachedTokens: maybe(aNumber), reasoningTokens: maybe(aNumber), usageEstimated: maybe(fc.boolean()), costUsd: maybe(aNumber), otelTraceId: maybe(hostileText),
  cacheStatus: maybe(hostileText), retries: fc.nat(10), guardrailVerdict: maybe(hostileText), errorCode: maybe(hostileText),
});

test('the request line is byte for byte what JSON.stringify of each field makes (stream destination)', () => {
  let written = '';
  const logger = pino({ base: undefined }, { write: (line: string) => void (written = line) });
  fc.assert(fc.property(aRecord, fc.boolean(), (record, aborted) => {
    logRequest(logger, record as unknown as RequestRecord, aborted);
    assert.equal(withoutTime(written), referenceLine(record as unknown as RequestRecord, aborted));
  }), { numRuns: 2000 });
});

test('milliseconds are printed as Number#toString prints the rounded value', () => {
  let written = '';
  const logger = pino({ base: undefined }, { write: (line: string) => void (written = line) });
  const base = { traceId: 't', method: 'POST', route: '/r', status: 200, retries: 0 } as unknown as RequestRecord;
  for (let thousandths = 0; thousandths < 200_000; thousandths += 7) {
    const latencyMs = thousandths / 1000 + 0.0001;
    logRequest(logger, { ...base, latencyMs }, false);
    assert.ok(written.includes(`"latency_ms":${Math.round(latencyMs * 1000) / 1000},`), written);
  }
});

test('through the file logger too: every line whole, byte for byte, with pino lines between', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'aigw-log-bytes-'));
  try {
    const path = join(dir, 'requests.log');
    const logger = createGatewayLogger({ destination: path });
    const records = fc.sample(fc.tuple(aRecord, fc.boolean()), { numRuns: 1500, seed: 7 });
    const expected: string[] = [];
    records.forEach(([record, aborted], index) => {
      logRequest(logger, record as unknown as RequestRecord, aborted);
      expected.push(referenceLine(record as unknown as RequestRecord, aborted));
      if (index % 200 === 3) {
        logger.warn({ index, note: 'é😀' }, 'between');
        expected.push('warn');
      }
    });
    await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
    const lines = (await readFile(path, 'utf8')).split(/(?<=\n)/);
    assert.equal(lines.length, expected.length);
    lines.forEach((line, index) => {
      if (expected[index] === 'warn') assert.equal((JSON.parse(line) as { note: string }).note, 'é😀');
      else assert.equal(withoutTime(line), expected[index]);
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// Runs of fields that repeat (method and route; key, config, provider, model, target) are
// written from bytes kept by their values: a kept run must only ever stand for its own values,
// including values that differ in one field only, equal strings that are other instances, and
// after the cache has filled and started over.
test('repeated field values are written byte for byte as the first time, whichever combination comes back', () => {
  let written = '';
  const logger = pino({ base: undefined }, { write: (line: string) => void (written = line) });
  // Few values a field, so that combinations come back and near misses (one field differs) are common.
  const pool = fc.constantFrom(undefined, 'a', 'é"');
  const models = fc.constantFrom(undefined, 'a', 'x'.repeat(600));
  const fresh = (value: string | undefined) => (value === undefined ? undefined : [...value].join('')); // an equal string, another instance
  const aRepeating = fc.record({
    traceId: fc.constant('t'), method: fc.constantFrom('POST', 'GET', 'P"OST'), route: fc.constantFrom('/v1/chat/completions', '/v1/é', 'x'.repeat(600)),
    status: fc.constantFrom(200, 502), latencyMs: fc.constant(1.5), retries: fc.nat(2), apiKeyId: pool, workspace: pool, configId: pool,
    provider: pool, model: models, targetPath: pool, modelRequested: models,
  });
  const check = (record: Record<string, unknown>) => {
    logRequest(logger, record as unknown as RequestRecord, false);
    assert.equal(withoutTime(written), referenceLine(record as unknown as RequestRecord, false));
  };
  fc.assert(fc.property(aRepeating, (record) => {
    check(record);
    check({ ...record, apiKeyId: fresh(record.apiKeyId), model: fresh(record.model), route: fresh(record.route) });
  }), { numRuns: 3000 });
  // Past the cache's bound (1,024 runs) it starts over: lines stay exact.
  for (let index = 0; index < 2500; index++) check({ traceId: 't', method: 'POST', route: `/r${index % 1100}`, status: 200, latencyMs: 1, retries: 0, apiKeyId: `k${index % 1300}`, model: 'm' });
});
