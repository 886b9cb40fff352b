// Issue 25, "hostile numbers": an upstream — a client's own custom host included — answered
// with usage numbers like 1e999 (Infinity once parsed) or 1.7e308, and prom-client's throw in
// the response's `close` listener ended the process; negative usage lowered a key's token
// total. Every number read from an upstream answer is now checked (finite, non-negative
// integer ≤ MAX_TOKEN_COUNT) before usage, cost, metrics, limits or the log see it, and a
// throw in the finish path is contained, logged and counted.
//
// A mock upstream answers every route family (chat plain and streamed, via OpenAI and
// translated from Anthropic; completions; embeddings; responses; a forwarded route;
// /v1/messages native and translated) with generated usage blocks — huge, negative, fractional, strings, nested
// objects — and after each request the gateway must still answer /health, every record and
// log line must hold sane numbers, and the key's token counter must never go down.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { MAX_TOKEN_COUNT } from '../../proxy/accounting/token-count.ts';
import type { RequestRecord } from '../../proxy/observability/request-record.ts';
import type { RateLimitCounterStore, WindowSpec } from '../../proxy/ratelimit/counter-store.ts';
import { MemoryCounterStore } from '../../proxy/ratelimit/memory-counter-store.ts';
import { eventually } from '../helpers/eventually.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

// Bounded so the default suite stays fast; FUZZ_RUNS raises it for the reliability run.
const RUNS = Math.max(1, Math.min(Number(process.env['FUZZ_RUNS'] ?? 30), 2000));
const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);

// ── A mock upstream whose every answer carries the usage text set for the next request ──

interface HostileUpstream {
  readonly url: string;
  /** JSON texts (not values: `1e999` has no JavaScript value that prints as itself). */
  usage: [string, string];
  close(): Promise<void>;
}

async function startHostileUpstream(): Promise<HostileUpstream> {
  const upstream = { usage: ['{}', '{}'] as [string, string] };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
      } catch {
        // answered anyway
      }
      const path = (req.url ?? '').split('?')[0] ?? '';
      const stream = body['stream'] === true;
      const [first, last] = upstream.usage;
      const text = answerFor(path, stream, first, last);
      res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
      res.end(text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(upstream, {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

const sse = (events: Array<[string | undefined, string]>): string =>
  events.map(([name, data]) => `${name === undefined ? '' : `event: ${name}\n`}data: ${data}\n\n`).join('');

function answerFor(path: string, stream: boolean, usage: string, lastUsage: string): string {
  if (path.endsWith('/messages')) {
    const message = (u: string, content: string, stop: string) =>
      `{"id":"msg_1","type":"message","role":"assistant","model":"claude-3-5-haiku-20241022","content":${content},"stop_reason":${stop},"stop_sequence":null,"usage":${u}}`;
    if (!stream) return message(usage, '[{"type":"text","text":"hi"}]', '"end_turn"');
    return sse([
      ['message_start', `{"type":"message_start","message":${message(usage, '[]', 'null')}}`],
      ['content_block_start', '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}'],
      ['content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}'],
      ['content_block_stop', '{"type":"content_block_stop","index":0}'],
      ['message_delta', `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":${lastUsage}}`],
      ['message_stop', '{"type":"message_stop"}'],
    ]);
  }
  if (path.endsWith('/images/generations')) return `{"created":1,"data":[{"url":"https://example.invalid/1.png"}],"usage":${usage}}`;
  if (path.endsWith('/embeddings')) {
    return `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2,0.3]}],"model":"text-embedding-3-small","usage":${usage}}`;
  }
  if (path.endsWith('/responses')) {
    const response = (u: string, status: string) =>
      `{"id":"resp_1","object":"response","created_at":1,"status":"${status}","model":"gpt-4o-mini","output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],"usage":${u}}`;
    if (!stream) return response(usage, 'completed');
    return sse([
      ['response.created', `{"type":"response.created","response":${response('null', 'in_progress')}}`],
      ['response.output_text.delta', '{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"hi"}'],
      ['response.completed', `{"type":"response.completed","response":${response(lastUsage, 'completed')}}`],
    ]);
  }
  if (path.endsWith('/chat/completions')) {
    const head = '"id":"c1","created":1,"model":"gpt-4o-mini"';
    if (!stream) {
      return `{${head},"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":${usage}}`;
    }
    return sse([
      [undefined, `{${head},"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"hi"},"finish_reason":null}]}`],
      [undefined, `{${head},"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`],
      [undefined, `{${head},"object":"chat.completion.chunk","choices":[],"usage":${lastUsage}}`],
      [undefined, '[DONE]'],
    ]);
  }
  // completions
  const head = '"id":"cmpl-1","object":"text_completion","created":1,"model":"gpt-3.5-turbo-instruct"';
  if (!stream) return `{${head},"choices":[{"index":0,"text":"hi","logprobs":null,"finish_reason":"stop"}],"usage":${usage}}`;
  return sse([
    [undefined, `{${head},"choices":[{"index":0,"text":"hi","logprobs":null,"finish_reason":null}]}`],
    [undefined, `{${head},"choices":[],"usage":${lastUsage}}`],
    [undefined, '[DONE]'],
  ]);
}

// ── Generated usage blocks ──

/** A JSON text where a token count belongs: sane counts, and everything a hostile host may send. */
const hostileNumber = fc.oneof(
  fc.constantFrom(
    '1e999', '-1e999', '1.7e308', '-1.7e308', '-0', '0', '-1', '-1999990', '1e9', '1000000001', '9007199254740993',
    '12.5', '1e-7', '"12"', '"NaN"', '"Infinity"', '"-1"', 'null', 'true', '{}', '[]', '{"value":5}', '[1,2]',
  ),
  fc.integer({ min: 0, max: 100_000 }).map(String),
  fc.integer().map(String),
  fc.double().map((value) => (Number.isFinite(value) ? String(value) : JSON.stringify(String(value)))),
  fc.string({ maxLength: 8 }).map((value) => JSON.stringify(value)),
  fc.jsonValue({ maxDepth: 2 }).map((value) => JSON.stringify(value)),
);

const FIELDS = ['prompt_tokens', 'completion_tokens', 'total_tokens', 'input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'] as const;
const DETAILS = ['prompt_tokens_details', 'completion_tokens_details', 'input_tokens_details', 'output_tokens_details'] as const;
const DETAIL_FIELDS = ['cached_tokens', 'reasoning_tokens'] as const;

const objectText = (entries: ReadonlyArray<readonly [string, string]>): string => `{${entries.map(([key, value]) => `${JSON.stringify(key)}:${value}`).join(',')}}`;

const usageBlock = fc.oneof(
  {
    weight: 9,
    arbitrary: fc
      .tuple(
        fc.uniqueArray(fc.tuple(fc.constantFrom(...FIELDS), hostileNumber), { selector: ([key]) => key, maxLength: FIELDS.length }),
        fc.uniqueArray(
          fc.tuple(
            fc.constantFrom(...DETAILS),
            fc.oneof(fc.uniqueArray(fc.tuple(fc.constantFrom(...DETAIL_FIELDS), hostileNumber), { selector: ([key]) => key }).map(objectText), hostileNumber),
          ),
          { selector: ([key]) => key, maxLength: 2 },
        ),
      )
      .map(([fields, details]) => objectText([...fields, ...details])),
  },
  // The usage itself is not an object.
  { weight: 1, arbitrary: hostileNumber },
);

// ── The gateway under test ──

/**
 * The memory counter store, watched: every amount added and every window named. A Proxy, so
 * whatever the store interface grows (reservations) passes through untouched.
 */
function watchedCounterStore() {
  const inner = new MemoryCounterStore();
  const added: number[] = [];
  const windows = new Map<string, WindowSpec>();
  const store = new Proxy(inner, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const spec = args[0] as Partial<WindowSpec> | undefined;
        if (typeof spec?.key === 'string' && typeof spec.windowMs === 'number') windows.set(spec.key, spec as WindowSpec);
        if (key === 'add') added.push(args[1] as number);
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  }) as RateLimitCounterStore;
  return {
    store,
    added,
    /** Tokens counted so far in every window of the key's token policy. */
    async tokensUsed(): Promise<number> {
      let used = 0;
      for (const spec of windows.values()) if (spec.key.startsWith('rl:key-tokens:')) used += (await inner.peek(spec, NOW)).used;
      return used;
    },
  };
}

let upstream: HostileUpstream;
let harness: Harness;
let counters: ReturnType<typeof watchedCounterStore>;
const records: RequestRecord[] = [];

before(async () => {
  upstream = await startHostileUpstream();
  counters = watchedCounterStore();
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'oai', provider: 'openai', apiKey: 'sk-upstream-oai', customHost: upstream.url },
        { slug: 'claude', provider: 'anthropic', apiKey: 'sk-upstream-claude', customHost: upstream.url },
      ],
      rateLimitPolicies: [
        { id: 'key-tokens', type: 'tokens', unit: 'rpd', value: 1e15, conditions: [{ key: 'api_key', value: 'test' }], group_by: [{ key: 'api_key' }] },
      ],
    }),
    counterStore: counters.store,
    now: () => NOW,
    requestSink: (record) => records.push(record),
  });
});

after(async () => {
  await harness?.close();
  await upstream?.close();
});

interface Family {
  readonly name: string;
  readonly route: string;
  readonly headers: Record<string, string>;
  readonly body: Record<string, unknown>;
}

const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
const MESSAGES = { model: 'claude-3-5-haiku-20241022', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] };
const viaOpenAI = { 'x-gateway-provider': '@oai' };
const viaAnthropic = { 'x-gateway-provider': '@claude' };

const FAMILIES: Family[] = [
  { name: 'chat', route: '/v1/chat/completions', headers: viaOpenAI, body: CHAT },
  { name: 'chat stream', route: '/v1/chat/completions', headers: viaOpenAI, body: { ...CHAT, stream: true } },
  { name: 'chat translated from Anthropic', route: '/v1/chat/completions', headers: viaAnthropic, body: { ...CHAT, model: MESSAGES.model } },
  { name: 'chat stream translated from Anthropic', route: '/v1/chat/completions', headers: viaAnthropic, body: { ...CHAT, model: MESSAGES.model, stream: true } },
  { name: 'completions', route: '/v1/completions', headers: viaOpenAI, body: { model: 'gpt-3.5-turbo-instruct', prompt: 'hi' } },
  { name: 'completions stream', route: '/v1/completions', headers: viaOpenAI, body: { model: 'gpt-3.5-turbo-instruct', prompt: 'hi', stream: true } },
  { name: 'embeddings', route: '/v1/embeddings', headers: viaOpenAI, body: { model: 'text-embedding-3-small', input: 'hi' } },
  { name: 'responses', route: '/v1/responses', headers: viaOpenAI, body: { model: 'gpt-4o-mini', input: 'hi' } },
  { name: 'responses stream', route: '/v1/responses', headers: viaOpenAI, body: { model: 'gpt-4o-mini', input: 'hi', stream: true } },
  { name: 'images (a forwarded route)', route: '/v1/images/generations', headers: viaOpenAI, body: { model: 'gpt-image-1', prompt: 'a cat' } },
  { name: 'messages native', route: '/v1/messages', headers: viaAnthropic, body: MESSAGES },
  { name: 'messages native stream', route: '/v1/messages', headers: viaAnthropic, body: { ...MESSAGES, stream: true } },
  { name: 'messages translated to chat', route: '/v1/messages', headers: viaOpenAI, body: { ...MESSAGES, model: 'gpt-4o-mini' } },
  { name: 'messages stream translated to chat', route: '/v1/messages', headers: viaOpenAI, body: { ...MESSAGES, model: 'gpt-4o-mini', stream: true } },
];

async function send(route: string, headers: Record<string, string>, body: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${harness.gateway.origin}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

function assertCount(value: unknown, what: string): void {
  if (value === undefined) return;
  assert.ok(typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= 8 * MAX_TOKEN_COUNT, `${what} is not a sane count: ${String(value)}`);
}

function assertSaneRecord(record: RequestRecord, what: string): void {
  for (const field of ['promptTokens', 'completionTokens', 'totalTokens', 'cachedTokens', 'reasoningTokens'] as const) assertCount(record[field], `${what}: ${field}`);
  if (record.costUsd !== undefined) assert.ok(Number.isFinite(record.costUsd) && record.costUsd >= 0, `${what}: cost ${record.costUsd}`);
  assert.ok(Number.isFinite(record.latencyMs), `${what}: latency`);
}

function assertSaneLogLines(): void {
  for (const line of harness.logs) {
    assert.notEqual(line['msg'], 'request accounting failed at one stage; the others went on', `a finish stage threw: ${JSON.stringify(line)}`);
    if (line['msg'] !== 'request') continue;
    for (const field of ['prompt_tokens', 'completion_tokens', 'total_tokens', 'cached_tokens', 'reasoning_tokens']) assertCount(line[field], `log line ${field}`);
    const cost = line['cost_usd'];
    if (cost !== undefined) assert.ok(typeof cost === 'number' && Number.isFinite(cost) && cost >= 0, `log line cost_usd ${String(cost)}`);
  }
}

async function assertSaneMetrics(): Promise<void> {
  const metrics = await harness.gateway.metrics.registry.getMetricsAsJSON();
  for (const name of ['gen_ai_client_token_usage', 'aigateway_cost_usd_total', 'aigateway_internal_errors_total']) {
    const metric = metrics.find((candidate) => candidate.name === name);
    for (const sample of metric?.values ?? []) {
      assert.ok(Number.isFinite(sample.value) && sample.value >= 0, `${name} ${JSON.stringify(sample.labels)} = ${sample.value}`);
      if (name === 'aigateway_internal_errors_total') assert.equal(sample.value, 0, `a finish stage threw: ${JSON.stringify(sample.labels)}`);
    }
  }
}

async function assertAlive(): Promise<void> {
  const health = await fetch(`${harness.gateway.origin}/health`);
  assert.equal(health.status, 200);
  await health.text();
}

/** One request with the given usage texts: it answers 200, is recorded once, sanely, and the key's tokens never go down. */
async function exercise(family: Family, usage: [string, string]): Promise<RequestRecord> {
  const before = records.length;
  const tokensBefore = await counters.tokensUsed();
  upstream.usage = usage;
  const { status, text } = await send(family.route, family.headers, family.body);
  assert.equal(status, 200, `${family.name} with usage ${usage.join(' / ')}: ${text.slice(0, 300)}`);
  await eventually(() => records.length > before, `${family.name}: the request's record`);
  const record = records[records.length - 1] as RequestRecord;
  assertSaneRecord(record, `${family.name} with usage ${usage.join(' / ')}`);
  assert.ok(counters.added.every((amount) => Number.isFinite(amount)), 'a non-finite amount reached the token counter');
  const tokensAfter = await counters.tokensUsed();
  assert.ok(Number.isFinite(tokensAfter) && tokensAfter >= tokensBefore, `the key's tokens went from ${tokensBefore} to ${tokensAfter}`);
  await assertAlive();
  return record;
}

describe('hostile usage numbers from an upstream', () => {
  test("the red team's answers (1e999, 1.7e308, negative) leave the gateway up and the records sane on every family", async () => {
    for (const family of FAMILIES) {
      for (const bad of ['1e999', '1.7e308', '-1999990']) {
        const usage = `{"prompt_tokens":${bad},"completion_tokens":${bad},"total_tokens":${bad},"input_tokens":${bad},"output_tokens":${bad}}`;
        const record = await exercise(family, [usage, usage]);
        for (const field of ['promptTokens', 'completionTokens', 'totalTokens'] as const) {
          assert.ok(record[field] === undefined || record[field] === 0, `${family.name} ${bad}: ${field} = ${record[field]}`);
        }
      }
    }
    assertSaneLogLines();
    await assertSaneMetrics();
    const rejected = (await harness.gateway.metrics.registry.getSingleMetric('aigateway_upstream_usage_rejected_total')?.get())?.values ?? [];
    const byReason = Object.fromEntries(rejected.map((sample) => [sample.labels['reason'], sample.value]));
    assert.ok((byReason['not_finite'] ?? 0) > 0 && (byReason['too_large'] ?? 0) > 0 && (byReason['negative'] ?? 0) > 0, JSON.stringify(byReason));
  });

  test('sane usage still counts: tokens, cost and the key total', async () => {
    const before = await counters.tokensUsed();
    const record = await exercise(FAMILIES[0] as Family, ['{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}', '{}']);
    assert.equal(record.promptTokens, 10);
    assert.equal(record.completionTokens, 5);
    assert.equal(record.totalTokens, 15);
    assert.ok(record.costUsd !== undefined && record.costUsd > 0, `cost ${record.costUsd}`);
    await eventually(async () => (await counters.tokensUsed()) === before + 15, 'the key charged 15 tokens');
    // A negative answer afterwards takes nothing back.
    await exercise(FAMILIES[0] as Family, ['{"prompt_tokens":-2000000,"completion_tokens":-5,"total_tokens":-1999990}', '{}']);
    assert.equal(await counters.tokensUsed(), before + 15);
  });

  for (const family of FAMILIES) {
    test(`generated usage blocks through ${family.name}`, async () => {
      await fc.assert(
        fc.asyncProperty(usageBlock, usageBlock, async (first, last) => {
          await exercise(family, [first, last]);
        }),
        { numRuns: RUNS },
      );
      assertSaneLogLines();
      await assertSaneMetrics();
    });
  }
});

describe('a throw while accounting a request is contained', () => {
  let throwing: Harness;
  let calls = 0;
  before(async () => {
    throwing = await startHarness({
      state: baseState({ providers: [{ slug: 'oai', provider: 'openai', apiKey: 'sk-upstream-oai', customHost: upstream.url }] }),
      requestSink: () => {
        calls++;
        throw new Error('log store hand-off failed');
      },
    });
  });
  after(async () => throwing?.close());

  test('a failing log-store hand-off is logged and counted; the log line is written and the gateway stays up', async () => {
    upstream.usage = ['{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}', '{}'];
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${throwing.gateway.origin}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-provider': '@oai' },
        body: JSON.stringify(CHAT),
      });
      assert.equal(response.status, 200);
      await response.text();
    }
    await eventually(() => calls === 3, 'three hand-offs');
    const health = await fetch(`${throwing.gateway.origin}/health`);
    assert.equal(health.status, 200);
    const counted = (await throwing.gateway.metrics.internalErrors.get()).values.find((sample) => sample.labels['stage'] === 'log_store');
    assert.equal(counted?.value, 3);
    const failures = throwing.logs.filter((line) => line['stage'] === 'log_store');
    assert.equal(failures.length, 3);
    assert.match(String((failures[0]?.['err'] as { message?: string } | undefined)?.message), /log store hand-off failed/);
    // The stages after it and before it still ran: each request has its log line with its tokens.
    assert.equal(throwing.logs.filter((line) => line['msg'] === 'request' && line['total_tokens'] === 7).length, 3);
  });
});
