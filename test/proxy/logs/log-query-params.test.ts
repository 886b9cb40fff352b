// Query strings → store filters: every accepted form, and a 400 naming the parameter for the rest.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GatewayError } from '../../../proxy/errors.ts';
import { DEFAULT_SUMMARY_RANGE_MS, parseLogListQuery, parseSummaryQuery } from '../../../proxy/logs/log-query-params.ts';

function rejectsNaming(run: () => unknown, param: string): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof GatewayError);
    assert.equal(error.status, 400);
    assert.equal(error.param, param);
    return true;
  });
}

describe('GET /v1/logs query parameters', () => {
  test('no parameters: every record, 20 per page', () => {
    assert.deepEqual(parseLogListQuery({}), { filter: {}, after: undefined, limit: 20 });
  });

  test('every filter at once', () => {
    const parsed = parseLogListQuery({
      trace_id: 't-1',
      route: '/v1/embeddings',
      'metadata.user': 'u1',
      'metadata.env': 'prod',
      status: '5xx',
      provider: 'openai',
      model: 'gpt-4o',
      workspace: 'team-a',
      api_key_id: 'k1',
      from: '2025-01-31T12:00:00Z',
      to: '1738411200000',
      after: 'rec-1',
      limit: '100',
    });
    assert.deepEqual(parsed, {
      filter: {
        traceId: 't-1',
        route: '/v1/embeddings',
        metadata: { user: 'u1', env: 'prod' },
        status: { min: 500, max: 599 },
        provider: 'openai',
        model: 'gpt-4o',
        workspace: 'team-a',
        apiKeyId: 'k1',
        from: Date.UTC(2025, 0, 31, 12),
        to: 1738411200000,
      },
      after: 'rec-1',
      limit: 100,
    });
  });

  test('status: exact or class, any case', () => {
    assert.deepEqual(parseLogListQuery({ status: '429' }).filter.status, { min: 429, max: 429 });
    assert.deepEqual(parseLogListQuery({ status: '4XX' }).filter.status, { min: 400, max: 499 });
  });

  test('times: a date is midnight UTC, offsets and milliseconds are honoured', () => {
    assert.equal(parseLogListQuery({ from: '2025-01-31' }).filter.from, Date.UTC(2025, 0, 31));
    assert.equal(parseLogListQuery({ from: '2025-01-31T12:00:00.250+02:00' }).filter.from, Date.UTC(2025, 0, 31, 10, 0, 0, 250));
  });

  const BAD: ReadonlyArray<readonly [string, Record<string, unknown>, string]> = [
    ['limit 0', { limit: '0' }, 'limit'],
    ['limit 101', { limit: '101' }, 'limit'],
    ['limit not a number', { limit: 'ten' }, 'limit'],
    ['limit fractional', { limit: '1.5' }, 'limit'],
    ['status word', { status: 'error' }, 'status'],
    ['status 600', { status: '600' }, 'status'],
    ['from garbage', { from: 'yesterday' }, 'from'],
    ['to without a zone', { to: '2025-01-31T12:00:00' }, 'to'],
    ['from after to', { from: '2000', to: '1000' }, 'from'],
    ['unknown parameter', { traceid: 'x' }, 'traceid'],
    ['repeated parameter', { trace_id: ['a', 'b'] }, 'trace_id'],
    ['empty trace id', { trace_id: '' }, 'trace_id'],
    ['empty metadata key', { 'metadata.': 'x' }, 'metadata.'],
    ['metadata key with a quote', { 'metadata.a"b': 'x' }, 'metadata.a"b'],
    ['empty cursor', { after: '' }, 'after'],
    ['overlong value', { model: 'm'.repeat(1_025) }, 'model'],
    ['group_by is not a list parameter', { group_by: 'model' }, 'group_by'],
  ];
  for (const [name, query, param] of BAD) {
    test(`400 naming "${param}": ${name}`, () => rejectsNaming(() => parseLogListQuery(query), param));
  }
});

describe('GET /v1/analytics/summary query parameters', () => {
  const NOW = Date.UTC(2025, 5, 1);

  test('the range defaults to the day before now', () => {
    const parsed = parseSummaryQuery({}, NOW);
    assert.deepEqual(parsed, { filter: { from: NOW - DEFAULT_SUMMARY_RANGE_MS, to: NOW }, groupBy: undefined });
  });

  test('group_by provider, model or metadata.<key>, with filters', () => {
    assert.deepEqual(parseSummaryQuery({ group_by: 'provider' }, NOW).groupBy, { kind: 'provider' });
    assert.deepEqual(parseSummaryQuery({ group_by: 'model' }, NOW).groupBy, { kind: 'model' });
    const parsed = parseSummaryQuery({ group_by: 'metadata.team', 'metadata.env': 'prod', from: '0', to: '1000' }, NOW);
    assert.deepEqual(parsed, { filter: { metadata: { env: 'prod' }, from: 0, to: 1000 }, groupBy: { kind: 'metadata', key: 'team' } });
  });

  test('a lone `to` before the default range start still gives from <= to', () => {
    const parsed = parseSummaryQuery({ to: '5000' }, NOW);
    assert.deepEqual([parsed.filter.from, parsed.filter.to], [5000 - DEFAULT_SUMMARY_RANGE_MS, 5000]);
  });

  for (const [name, query, param] of [
    ['group_by unknown', { group_by: 'user' }, 'group_by'],
    ['group_by metadata without a key', { group_by: 'metadata.' }, 'group_by'],
    ['a lone from later than now', { from: String(NOW + 1) }, 'from'],
    ['limit is not a summary parameter', { limit: '5' }, 'limit'],
  ] as const) {
    test(`400 naming "${param}": ${name}`, () => rejectsNaming(() => parseSummaryQuery(query, NOW), param));
  }
});
