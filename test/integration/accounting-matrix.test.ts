// Every request accounted exactly once, whatever happens to it: the official openai SDK,
// a raw client that closes right after `data: [DONE]` and one that leaves mid-stream drive
// each outcome (plain, streamed, abandoned 499, upstream error, timeout, guardrail deny,
// rate-limited, cache hits plain and replayed, overload 503, auth failure) through a real
// gateway. Then the log store, the log lines and /metrics each hold exactly one entry per
// request sent, with the status the client saw, tokens and cost.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { requestLogRoutes } from '../../proxy/logs/request-log-routes.ts';
import { createRequestLogWriter, type RequestLogWriter } from '../../proxy/logs/request-log-writer.ts';
import { SqliteLogStore } from '../../proxy/logs/sqlite-log-store.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const PROVIDER_KEY = 'sk-upstream-accounting-0001';
// Records of requests refused before a key is known (auth failure, overload) have no
// workspace; only the org-wide scope reads those (docs/security.md, "Workspaces are a
// tenancy boundary"), so the log is read with an org_admin key.
const ORG_ADMIN_KEY = 'gw-org-admin-accounting-012345678';
const RUN = randomUUID().slice(0, 8);
const MAX_IN_FLIGHT = 3;
const CHAT = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'hello there' }] };

interface LogEntry {
  id: string;
  trace_id: string;
  status: number;
  route: string;
  ttft_ms: number | null;
  usage: { prompt_tokens: number | null; completion_tokens: number | null; total_tokens: number | null; estimated: boolean };
  cost_usd: number | null;
  cache_status: string | null;
  error_code: string | null;
}

let dir: string;
let mock: MockOpenAI;
let store: SqliteLogStore;
let writer: RequestLogWriter;
let harness: Harness;
/** trace id → statuses the clients saw, in order. */
const sent = new Map<string, number[]>();

const traceOf = (name: string): string => `acct-${RUN}-${name}`;
function note(name: string, status: number): void {
  const list = sent.get(traceOf(name)) ?? [];
  list.push(status);
  sent.set(traceOf(name), list);
}

function sdk(name: string, headers: Record<string, string> = {}, apiKey = TEST_GATEWAY_KEY): OpenAI {
  return new OpenAI({
    baseURL: harness.gateway.url,
    apiKey: 'unused',
    maxRetries: 0,
    defaultHeaders: { 'x-gateway-api-key': apiKey, 'x-gateway-virtual-key': 'vk-mock', 'x-gateway-trace-id': traceOf(name), 'x-gateway-metadata': JSON.stringify({ acct: name }), ...headers },
  });
}

async function statusOf(call: Promise<unknown>): Promise<number> {
  return call.then(
    () => 200,
    (error: unknown) => (error instanceof OpenAI.APIError ? (error.status ?? 0) : -1),
  );
}

/** A raw streaming client: `leave` decides, per received text so far, when to close the socket. */
function rawStream(name: string, leave: (text: string) => boolean, body: Record<string, unknown> = CHAT): Promise<{ status: number; text: string }> {
  const url = new URL(`${harness.gateway.url}/chat/completions`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-api-key': TEST_GATEWAY_KEY,
          'x-gateway-virtual-key': 'vk-mock',
          'x-gateway-trace-id': traceOf(name),
          'x-gateway-metadata': JSON.stringify({ acct: name }),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          if (leave(text)) {
            req.destroy();
            resolve({ status: res.statusCode ?? 0, text });
          }
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
    req.end(JSON.stringify({ ...body, stream: true }));
  });
}

async function logsOf(name: string, readerKey = ORG_ADMIN_KEY): Promise<LogEntry[]> {
  const response = await fetch(`${harness.gateway.url}/logs?trace_id=${encodeURIComponent(traceOf(name))}&limit=100`, {
    headers: { 'x-gateway-api-key': readerKey },
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as { data: LogEntry[] }).data;
}

async function storedCount(): Promise<number> {
  let total = 0;
  for (const trace of sent.keys()) total += (await logsOf(trace.slice(`acct-${RUN}-`.length))).length;
  return total;
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'aigw-accounting-'));
  mock = await startMockOpenAI({ apiKey: PROVIDER_KEY });
  store = await SqliteLogStore.open({ path: join(dir, 'logs.sqlite') });
  writer = createRequestLogWriter(store, { batchSize: 20, flushIntervalMs: 20 });
  const state = baseState();
  Object.assign(state, {
    apiKeys: [...(state['apiKeys'] as unknown[]), { id: 'org-admin', key: ORG_ADMIN_KEY, workspace: 'platform', scopes: ['org_admin'] }],
    providers: [{ slug: 'mock', provider: 'openai', virtualKey: 'vk-mock', apiKey: PROVIDER_KEY, customHost: mock.url }],
    configs: [
      { id: 'cached', config: { provider: '@mock', cache: { mode: 'simple', max_age: 60 } } },
      { id: 'guarded', config: { provider: '@mock', input_guardrails: [{ id: 'words', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }] } },
    ],
    rateLimitPolicies: [
      { id: 'limited', type: 'requests', unit: 'rpm', value: 1, conditions: [{ key: 'metadata.acct', value: 'limited' }], group_by: [{ key: 'metadata.acct' }] },
      { id: 'leaver-tokens', type: 'tokens', unit: 'rpm', value: 5, conditions: [{ key: 'metadata.acct', value: 'token-leaver' }], group_by: [{ key: 'metadata.acct' }] },
    ],
  });
  // One key fills the whole in-flight budget here (the overload case), so its own share is the budget.
  harness = await startHarness({ state, requestSink: writer.sink, plugins: [requestLogRoutes(store)], maxInFlight: MAX_IN_FLIGHT, maxInFlightPerKey: MAX_IN_FLIGHT });
});

after(async () => {
  await harness?.close();
  await writer?.close();
  await store?.close();
  await mock?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('every request accounted exactly once', () => {
  test('each outcome, driven by real clients, is one record with the status the client saw', async () => {
    // Plain, with the official SDK.
    for (let i = 0; i < 3; i++) note('plain', await statusOf(sdk('plain').chat.completions.create(CHAT)));

    // Streamed and read to the end by the SDK (which stops reading at [DONE] and closes).
    for (let i = 0; i < 3; i++) {
      note('sdk-stream', await statusOf((async () => {
        const stream = await sdk('sdk-stream').chat.completions.create({ ...CHAT, stream: true });
        for await (const chunk of stream) assert.ok(chunk.choices !== undefined);
      })()));
    }

    // A raw client that closes the moment it has seen [DONE]: the answer was whole → 200.
    for (let i = 0; i < 3; i++) note('raw-done', (await rawStream('raw-done', (text) => text.includes('data: [DONE]'))).status === 200 ? 200 : -1);

    // A raw client that leaves after the first chunk of a slow stream → 499.
    mock.setChunkDelay(40);
    for (let i = 0; i < 2; i++) {
      await rawStream('raw-leave', (text) => text.includes('chat.completion.chunk'));
      note('raw-leave', 499);
    }
    await mock.waitForAborted(2, 5000);
    mock.setChunkDelay(0);

    // Upstream error.
    for (let i = 0; i < 2; i++) {
      mock.enqueue({ status: 500, body: { error: { message: 'boom', type: 'server_error', param: null, code: null } } });
      note('upstream-error', await statusOf(sdk('upstream-error').chat.completions.create(CHAT)));
    }

    // Guardrail deny (446).
    for (let i = 0; i < 2; i++) {
      note('guardrail', await statusOf(sdk('guardrail', { 'x-gateway-config': 'guarded' }).chat.completions.create({ ...CHAT, messages: [{ role: 'user', content: 'forbidden' }] })));
    }

    // Rate-limited: one allowed, then 429s.
    for (let i = 0; i < 3; i++) note('limited', await statusOf(sdk('limited').chat.completions.create(CHAT)));

    // Cache: a miss then hits, plain and a replayed stream.
    for (let i = 0; i < 2; i++) note('cache-plain', await statusOf(sdk('cache-plain', { 'x-gateway-config': 'cached' }).chat.completions.create(CHAT)));
    for (let i = 0; i < 2; i++) {
      note('cache-stream', await statusOf((async () => {
        const stream = await sdk('cache-stream', { 'x-gateway-config': 'cached' }).chat.completions.create({ ...CHAT, stream: true });
        for await (const chunk of stream) assert.ok(chunk !== undefined);
      })()));
    }

    // Auth failure.
    for (let i = 0; i < 2; i++) note('auth', await statusOf(sdk('auth', {}, 'gw-wrong-key-000000000-012345678').chat.completions.create(CHAT)));

    // Timeouts hold every in-flight slot; one more request meets the overload 503.
    for (let i = 0; i < MAX_IN_FLIGHT; i++) mock.enqueue({ stall: 'before-headers' });
    const seen = mock.requests.length;
    const stalled = Array.from({ length: MAX_IN_FLIGHT }, () => statusOf(sdk('timeout', { 'x-gateway-request-timeout': '1500' }).chat.completions.create(CHAT)));
    // Every slot is taken once the stalled requests have reached the provider.
    await mock.waitForRequests(seen + MAX_IN_FLIGHT, 5000);
    note('overload', await statusOf(sdk('overload').chat.completions.create(CHAT)));
    for (const status of await Promise.all(stalled)) note('timeout', status);

    // Token limits charge a stream the client left: the estimate exceeds the 5-token window,
    // so the next request of that group is refused.
    mock.setChunkDelay(40);
    await rawStream('token-leaver', (text) => text.includes('chat.completion.chunk'));
    note('token-leaver', 499);
    mock.setChunkDelay(0);
    await eventually(async () => (await logsOf('token-leaver')).length === 1, 'the leaver recorded', { timeoutMs: 10_000 });
    note('token-leaver', await statusOf(sdk('token-leaver').chat.completions.create(CHAT)));

    const expectedStatuses: Record<string, number[]> = {
      plain: [200, 200, 200],
      'sdk-stream': [200, 200, 200],
      'raw-done': [200, 200, 200],
      'raw-leave': [499, 499],
      'upstream-error': [500, 500],
      guardrail: [446, 446],
      limited: [200, 429, 429],
      'cache-plain': [200, 200],
      'cache-stream': [200, 200],
      auth: [401, 401],
      overload: [503],
      'token-leaver': [499, 429],
    };
    for (const [name, statuses] of Object.entries(expectedStatuses)) assert.deepEqual(sent.get(traceOf(name)), statuses, `${name}: what the clients saw`);
    const timeouts = sent.get(traceOf('timeout')) ?? [];
    assert.equal(timeouts.length, MAX_IN_FLIGHT);
    assert.ok(timeouts.every((status) => status === 408 || status === 504), `timeouts: ${timeouts}`);

    // The log store: exactly one record per request, with the client's status.
    const total = [...sent.values()].reduce((sum, list) => sum + list.length, 0);
    await eventually(async () => (await storedCount()) >= total, 'every record stored', { timeoutMs: 5000 });
    for (const [trace, statuses] of sent) {
      const name = trace.slice(`acct-${RUN}-`.length);
      const records = await logsOf(name);
      assert.deepEqual(records.map((record) => record.status).sort(), [...statuses].sort(), `${name}: one record per request, same statuses`);
    }
    assert.equal(await storedCount(), total);
    // The workspace admin reads its own workspace's records, not those of no workspace.
    assert.equal((await logsOf('plain', TEST_GATEWAY_KEY)).length, 3);
    assert.deepEqual(await logsOf('auth', TEST_GATEWAY_KEY), [], 'a record of no workspace is not a workspace admin’s');

    // Tokens, time to first token and cost where an answer came back.
    for (const record of [...(await logsOf('plain')), ...(await logsOf('sdk-stream')), ...(await logsOf('raw-done'))]) {
      assert.ok((record.usage.total_tokens ?? 0) > 0, `tokens on ${record.trace_id}`);
      assert.equal(record.usage.estimated, false);
      assert.ok((record.cost_usd ?? 0) > 0, `cost on ${record.trace_id}`);
    }
    for (const record of await logsOf('sdk-stream')) assert.ok(record.ttft_ms !== null && record.ttft_ms > 0);
    for (const record of await logsOf('raw-leave')) {
      assert.equal(record.usage.estimated, true, 'a left stream is charged an estimate');
      assert.ok((record.usage.total_tokens ?? 0) > 0);
    }
    const hits = [...(await logsOf('cache-plain')), ...(await logsOf('cache-stream'))].filter((record) => record.cache_status?.endsWith('HIT'));
    assert.equal(hits.length, 2, 'one plain hit and one replayed stream');
    for (const hit of hits) assert.equal(hit.cost_usd, 0, 'an answer from the cache costs nothing at the provider');

    // The log lines: one per request.
    const lines = harness.logs.filter((line) => line['msg'] === 'request' && String(line['trace_id']).startsWith(`acct-${RUN}-`));
    assert.equal(lines.length, total, 'one log line per request');

    // /metrics: one observation per request on the chat route.
    const metrics = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    let counted = 0;
    for (const match of metrics.matchAll(/^aigateway_requests_total\{([^}]*)\} (\d+)/gm)) {
      if ((match[1] ?? '').includes('route="/v1/chat/completions"')) counted += Number(match[2]);
    }
    assert.equal(counted, total, 'aigateway_requests_total counts every request once');
    assert.match(metrics, /aigateway_cost_usd_total\{provider="openai",model="gpt-4o-mini"\} [0-9.e-]+/);
  });

  test('a stream the client did not ask usage for is byte for byte what the provider sends without it', async () => {
    const { text } = await rawStream('bytes', () => false);
    note('bytes', 200);
    const upstream = mock.lastResponseBytes().toString('utf8');
    const asked = mock.requests.at(-1)?.json as { stream_options?: { include_usage?: boolean } };
    assert.equal(asked.stream_options?.include_usage, true, 'the gateway asked the provider for usage');
    assert.doesNotMatch(text, /usage/, 'no "usage": null on chunks, no usage chunk');
    const withoutUsage = upstream
      .split('\n\n')
      .filter((frame) => !/"choices":\[\],"usage":\{/.test(frame))
      .map((frame) => frame.replace(/,"usage":null/, ''))
      .join('\n\n');
    assert.equal(text, withoutUsage);
    await eventually(async () => (await logsOf('bytes')).length === 1, 'the record', { timeoutMs: 10_000 });
    assert.ok(((await logsOf('bytes'))[0]?.usage.total_tokens ?? 0) > 0, 'the gateway still counted the tokens');
  });
});

describe('cost in the analytics summary', () => {
  test('totals by API key and workspace carry the cost and count unpriced requests apart', async () => {
    const headers = { 'x-gateway-api-key': TEST_GATEWAY_KEY };
    // A model the table does not know: usage comes back, the cost stays unknown.
    note('unpriced', await statusOf(sdk('unpriced').chat.completions.create({ ...CHAT, model: 'acme-private-7b' })));
    await eventually(async () => (await logsOf('unpriced')).length === 1, 'the unpriced record', { timeoutMs: 10_000 });
    const [unpriced] = await logsOf('unpriced');
    assert.ok((unpriced?.usage.total_tokens ?? 0) > 0);
    assert.equal(unpriced?.cost_usd, null, 'unknown, not zero');

    for (const groupBy of ['api_key_id', 'workspace']) {
      const response = await fetch(`${harness.gateway.url}/analytics/summary?group_by=${groupBy}`, { headers });
      assert.equal(response.status, 200);
      const summary = (await response.json()) as { total: { cost: { usd: number; unpriced_requests: number } }; data: Array<{ group: string | null; cost: { usd: number } }> };
      assert.ok(summary.total.cost.usd > 0, `${groupBy}: total cost`);
      assert.ok(summary.total.cost.unpriced_requests >= 1, `${groupBy}: unpriced counted`);
      const own = summary.data.find((group) => group.group === (groupBy === 'api_key_id' ? 'test' : 'default'));
      assert.ok(own !== undefined && own.cost.usd > 0, `${groupBy}: the key's group has the cost`);
    }
    const metrics = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    assert.match(metrics, /aigateway_cost_unpriced_requests_total\{provider="openai",model="acme-private-7b"\} 1/);
  });
});
