// Issue 25, "hostile numbers", unit level: the one check every upstream token count passes
// (proxy/accounting/token-count.ts), the readers that use it (the OpenAI-shape usage tap,
// the Anthropic, Gemini, Converse and chat→Messages translators), the finish point's gate,
// and containment of a throw in one stage of a request's accounting.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { pino } from 'pino';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { PriceTable } from '../../proxy/accounting/price-table.ts';
import { MAX_TOKEN_COUNT, saneCost, saneUsage, tokenCount, tokenCountOr, tokenCountRejections } from '../../proxy/accounting/token-count.ts';
import { messagesUsageOf } from '../../proxy/ingress/anthropic-messages/chat-to-messages.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { createGatewayMetrics } from '../../proxy/observability/gateway-metrics.ts';
import { finishRequest } from '../../proxy/observability/request-finish.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import { addAnthropicUsage, emptyUsageTotals, openAIUsageOf } from '../../proxy/providers/anthropic/anthropic-response.ts';
import { converseUsage } from '../../proxy/providers/bedrock/bedrock-converse-response.ts';
import { geminiUsage } from '../../proxy/providers/vertex-ai/vertex-gemini-response.ts';
import { usageOf } from '../../proxy/ratelimit/usage-tap.ts';
import { newRequestContext } from '../../proxy/request-context.ts';

const RUNS = Math.max(1, Math.min(Number(process.env['FUZZ_RUNS'] ?? 200), 5000));

/** Values a hostile host can put where a count belongs, as JSON.parse gives them. */
const hostile = fc.oneof(
  fc.constantFrom(Infinity, -Infinity, Number.NaN, 1.7e308, -1.7e308, -0, -1, -1_999_990, MAX_TOKEN_COUNT + 1, 2 ** 53 + 2, 12.5, 1e-7, '12', 'NaN', null, true, {}, []),
  fc.integer({ min: 0, max: 1_000_000 }),
  fc.integer(),
  fc.double(),
  fc.jsonValue({ maxDepth: 2 }),
);
const usageObject = fc.dictionary(
  fc.constantFrom(
    'prompt_tokens', 'completion_tokens', 'total_tokens', 'input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens',
    'promptTokenCount', 'candidatesTokenCount', 'thoughtsTokenCount', 'totalTokenCount', 'cachedContentTokenCount',
    'inputTokens', 'outputTokens', 'cacheReadInputTokens', 'cacheWriteInputTokens',
  ),
  hostile,
).chain((fields) =>
  fc.record({ prompt_tokens_details: fc.dictionary(fc.constantFrom('cached_tokens'), hostile), completion_tokens_details: fc.dictionary(fc.constantFrom('reasoning_tokens'), hostile) }, { requiredKeys: [] })
    .map((details) => ({ ...fields, ...details })),
);

function isSaneCount(value: unknown, bound = MAX_TOKEN_COUNT, allowMinusZero = false): boolean {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= bound && (allowMinusZero || !Object.is(value, -0));
}

function assertCounts(record: Record<string, unknown>, bound: number, what: string, allowMinusZero = false): void {
  for (const [key, value] of Object.entries(record)) {
    if (value === undefined) continue;
    if (typeof value === 'object' && value !== null) assertCounts(value as Record<string, unknown>, bound, `${what}.${key}`, allowMinusZero);
    else assert.ok(isSaneCount(value, bound, allowMinusZero), `${what}.${key} = ${String(value)}`);
  }
}

describe('tokenCount: the one check of an upstream count', () => {
  test('sane counts pass, -0 reads as 0', () => {
    for (const value of [0, 1, 4096, MAX_TOKEN_COUNT]) assert.equal(tokenCount(value), value);
    assert.ok(Object.is(tokenCount(-0), 0));
  });

  test('everything else is absent, and counted by reason', () => {
    const before = { ...tokenCountRejections() };
    const cases: Array<[unknown, string]> = [
      [Infinity, 'not_finite'], [-Infinity, 'not_finite'], [Number.NaN, 'not_finite'],
      [-1, 'negative'], [-1_999_990, 'negative'], [12.5, 'fraction'], [1e-7, 'fraction'],
      [MAX_TOKEN_COUNT + 1, 'too_large'], [1.7e308, 'too_large'],
      ['12', 'not_number'], [{}, 'not_number'], [[], 'not_number'], [true, 'not_number'],
    ];
    const expected: Record<string, number> = {};
    for (const [value, reason] of cases) {
      assert.equal(tokenCount(value), undefined, String(value));
      expected[reason] = (expected[reason] ?? 0) + 1;
    }
    const after = tokenCountRejections();
    for (const [reason, count] of Object.entries(expected)) assert.equal(after[reason as keyof typeof after] - before[reason as keyof typeof before], count, reason);
  });

  test('null and undefined are absent, not refused', () => {
    const before = Object.values(tokenCountRejections()).reduce((a, b) => a + b, 0);
    assert.equal(tokenCount(null), undefined);
    assert.equal(tokenCount(undefined), undefined);
    assert.equal(tokenCountOr(undefined, 7), 7);
    assert.equal(Object.values(tokenCountRejections()).reduce((a, b) => a + b, 0), before);
  });

  test('any value gives a sane count or nothing', () => {
    fc.assert(fc.property(fc.oneof(hostile, fc.anything()), (value) => {
      const count = tokenCount(value);
      assert.ok(count === undefined || isSaneCount(count));
    }), { numRuns: RUNS });
  });
});

describe('saneUsage and saneCost: the gate at the finish point', () => {
  test('sane usage is returned as it is (no allocation)', () => {
    const usage = { prompt: 10, completion: 5, total: 15, cachedPrompt: 2 };
    assert.equal(saneUsage(usage), usage);
    const derived = { prompt: 3 * MAX_TOKEN_COUNT, completion: MAX_TOKEN_COUNT, total: 4 * MAX_TOKEN_COUNT };
    assert.equal(saneUsage(derived), derived);
  });

  test('bad fields are dropped and a bad total is recomputed', () => {
    assert.deepEqual(saneUsage({ prompt: Infinity, completion: 5, total: -1 }), { prompt: undefined, completion: 5, total: 5, cachedPrompt: undefined, cacheWrite: undefined, reasoning: undefined });
    assert.deepEqual(saneUsage({ prompt: -3, completion: Number.NaN, total: 1e300 }), { prompt: undefined, completion: undefined, total: undefined, cachedPrompt: undefined, cacheWrite: undefined, reasoning: undefined });
  });

  test('any numbers in, sane counts out', () => {
    const field = fc.option(fc.oneof(fc.double(), fc.integer(), fc.constantFrom(Infinity, -Infinity, Number.NaN, -0)), { nil: undefined });
    fc.assert(fc.property(field, field, field, field, field, field, (prompt, completion, total, cachedPrompt, cacheWrite, reasoning) => {
      // The gate lets -0 by: no reader makes one, and it prints as 0 in JSON, the log line and prom-client.
      assertCounts({ ...saneUsage({ prompt, completion, total, cachedPrompt, cacheWrite, reasoning }) }, 8 * MAX_TOKEN_COUNT, 'usage', true);
    }), { numRuns: RUNS });
  });

  test('a cost is recorded only when finite and non-negative', () => {
    assert.equal(saneCost(0.25), 0.25);
    assert.equal(saneCost(0), 0);
    for (const bad of [Infinity, -Infinity, Number.NaN, -0.01]) assert.equal(saneCost(bad), undefined, String(bad));
    assert.equal(saneCost(undefined), undefined);
  });

  test('the largest accepted usage prices to a finite cost', () => {
    const table = new PriceTable([{ model: 'private-model', inputPerMillion: 1e6, outputPerMillion: 1e6 }]);
    const cost = table.costUsd('openai', 'private-model', { prompt: 3 * MAX_TOKEN_COUNT, completion: MAX_TOKEN_COUNT });
    assert.ok(cost !== undefined && Number.isFinite(cost) && cost > 0);
  });
});

describe('every usage reader hands on sane counts only', () => {
  test('OpenAI-shaped answers (chat, completions, embeddings, responses)', () => {
    fc.assert(fc.property(usageObject, fc.boolean(), (usage, nested) => {
      const read = usageOf(nested ? { response: { usage } } : { usage });
      if (read !== undefined) assertCounts({ ...read }, 2 * MAX_TOKEN_COUNT, 'usageOf');
    }), { numRuns: RUNS });
    assert.deepEqual(usageOf({ usage: { prompt_tokens: 1e999, completion_tokens: -5, total_tokens: 1.7e308 } }), { prompt: undefined, completion: undefined, total: undefined });
    assert.deepEqual(usageOf({ usage: { prompt_tokens: 'x', input_tokens: 7, completion_tokens: 3 } }), { prompt: 7, completion: 3, total: 10 });
  });

  test('Anthropic usage: a bad value leaves the running total as it was', () => {
    const totals = emptyUsageTotals();
    addAnthropicUsage(totals, { input_tokens: 12, output_tokens: 1, cache_read_input_tokens: 4 });
    addAnthropicUsage(totals, { input_tokens: Infinity, output_tokens: -1_999_990, cache_read_input_tokens: '9', cache_creation_input_tokens: 0.5 });
    assert.deepEqual(totals, { inputTokens: 12, cacheCreationTokens: 0, cacheReadTokens: 4, outputTokens: 1 });
    fc.assert(fc.property(fc.array(usageObject, { maxLength: 3 }), (events) => {
      const running = emptyUsageTotals();
      for (const event of events) addAnthropicUsage(running, event);
      assertCounts({ ...running }, MAX_TOKEN_COUNT, 'anthropic totals');
      assertCounts(openAIUsageOf(running) as unknown as Record<string, unknown>, 4 * MAX_TOKEN_COUNT, 'anthropic → openai');
    }), { numRuns: RUNS });
  });

  test('Gemini, Bedrock Converse and chat → Messages usage', () => {
    fc.assert(fc.property(usageObject, (usage) => {
      assertCounts(geminiUsage(usage) ?? {}, 3 * MAX_TOKEN_COUNT, 'gemini');
      assertCounts(converseUsage(usage) ?? {}, 3 * MAX_TOKEN_COUNT, 'converse');
      const messages = messagesUsageOf(usage);
      assertCounts({ ...messages }, MAX_TOKEN_COUNT, 'messages');
    }), { numRuns: RUNS });
    // Cached tokens are part of the prompt: a count above it cannot inflate the input side.
    assert.deepEqual(messagesUsageOf({ prompt_tokens: 5, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 1e9 } }), {
      input_tokens: 0, output_tokens: 2, cache_creation_input_tokens: 0, cache_read_input_tokens: 5,
    });
  });
});

describe('the finish point contains a throw in any one stage', () => {
  function fixture() {
    const loaded = loadStateFromTexts({ state: 'apiKeys:\n  - id: k\n    key: gw-unit-key-0123456789-0123456789\n    scopes: [inference]\n' }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok, JSON.stringify(loaded));
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ base: undefined }, new Writable({ write(chunk: Buffer, _e, done) { for (const line of chunk.toString().split('\n')) if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>); done(); } }));
    const metrics = createGatewayMetrics({ defaultMetrics: false });
    const context = newRequestContext('trace-unit', loaded.state);
    context.provider = 'openai';
    context.model = 'gpt-4o-mini';
    const request = { gateway: context, method: 'POST', routeOptions: { url: '/v1/chat/completions' } } as unknown as FastifyRequest;
    const reply = { raw: { writableFinished: true, headersSent: true }, statusCode: 200 } as unknown as FastifyReply;
    const records: RequestRecord[] = [];
    return { context, request, reply, lines, metrics, records, deps: { logger, metrics, requestSink: (record: RequestRecord) => records.push(record), tracer: undefined } };
  }

  test('usage that bypassed the readers is checked at the gate before metrics, cost and the record', () => {
    const { context, request, reply, records, deps } = fixture();
    context.usage = { prompt: Infinity, completion: -1_999_990, total: 1.7e308 };
    finishRequest(request, reply, deps);
    assert.equal(records.length, 1);
    assert.equal(records[0]?.promptTokens, undefined);
    assert.equal(records[0]?.completionTokens, undefined);
    assert.equal(records[0]?.totalTokens, undefined);
    assert.equal(records[0]?.costUsd, undefined);
  });

  test('a metric that throws is logged and counted; the record, the log line and the cost are still made', async () => {
    const { context, request, reply, records, lines, metrics, deps } = fixture();
    context.usage = { prompt: 10, completion: 5, total: 15 };
    context.ttftMs = Number.NaN; // prom-client throws on a NaN observation
    finishRequest(request, reply, deps);
    assert.equal(records.length, 1);
    assert.equal(records[0]?.totalTokens, 15);
    assert.ok(records[0]?.costUsd !== undefined && records[0].costUsd > 0);
    const counted = (await metrics.internalErrors.get()).values.find((sample) => sample.labels['stage'] === 'metrics');
    assert.equal(counted?.value, 1);
    assert.ok(lines.some((line) => line['stage'] === 'metrics' && line['level'] === 50));
    // Finished once: a second close changes nothing.
    finishRequest(request, reply, deps);
    assert.equal(records.length, 1);
  });

  test('a token charge that throws does not stop the rest', async () => {
    const { context, request, reply, records, metrics, deps } = fixture();
    context.usage = { prompt: 1, completion: 1, total: 2 };
    context.chargeTokens = () => {
      throw new Error('counter store exploded');
    };
    finishRequest(request, reply, deps);
    assert.equal(records.length, 1);
    const counted = (await metrics.internalErrors.get()).values.find((sample) => sample.labels['stage'] === 'tokens');
    assert.equal(counted?.value, 1);
  });
});
