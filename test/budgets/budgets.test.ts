// Usage-limit policies (budgets) on one gateway with the in-memory store: reservation and
// refusal in the OpenAI and Anthropic shapes, headers, the policies API, cache hits, aborted
// streams, embeddings, alerts, metrics, analytics and fail-open/closed on a store outage.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { RedisBudgetStore } from '../../proxy/budgets/redis-budget-store.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { silentServer } from '../helpers/redis-test-kit.ts';
import { startBudgetUpstream, type BudgetUpstream } from './budget-upstream.ts';

// $0.001 per prompt token, $0.002 per completion token: a default answer (10 + 20) costs $0.05.
const PRICES = [{ model: 'budget-model', inputPerMillion: 1000, outputPerMillion: 2000, cachedInputPerMillion: 100 }];
const CHAT = { model: 'budget-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };

let upstream: BudgetUpstream;
let hook: { url: string; calls: unknown[]; close(): void };
before(async () => {
  upstream = await startBudgetUpstream();
  const calls: unknown[] = [];
  const server = http.createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      calls.push(JSON.parse(text));
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hook = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alert`, calls, close: () => server.close() };
});
after(async () => {
  await upstream.close();
  hook.close();
});

function stateWith(policies: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return baseState({
    providers: [
      { slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: `${upstream.origin}/v1` },
      { slug: 'claude', provider: 'anthropic', virtualKey: 'vk-claude', apiKey: 'sk-ant-up', customHost: `${upstream.origin}/v1` },
    ],
    configs: [{ id: 'cached', config: { provider: '@up', cache: { mode: 'simple', max_age: 60 } } }],
    modelPrices: PRICES,
    usageLimitPolicies: policies,
    ...extra,
  });
}

async function send(harness: Harness, path: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${harness.gateway.origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-up', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json().catch(() => undefined)) as Record<string, any> };
}

async function analytics(harness: Harness): Promise<Array<Record<string, any>>> {
  const response = await fetch(`${harness.gateway.origin}/v1/analytics/budgets`, { headers: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
  assert.equal(response.status, 200);
  return ((await response.json()) as { data: Array<Record<string, any>> }).data;
}

/** Spend settled on a policy once no reservation is open (settlement runs as the response closes). */
async function settledSpend(harness: Harness, id: string): Promise<number> {
  return eventually(async () => {
    const policy = (await analytics(harness)).find((entry) => entry.policy_id === id);
    const groups = (policy?.groups ?? []) as Array<{ reserved: number; spent: number }>;
    return groups.every((group) => group.reserved === 0) ? { spent: policy?.spent as number } : undefined;
  }, `settled spend of ${id}`).then((value) => value.spent);
}

const COST_POLICY = {
  id: 'team-cost',
  name: 'team dollars',
  type: 'cost',
  credit_limit: 0.2,
  periodic_reset: 'monthly',
  time_zone: 'Europe/Berlin',
  conditions: [{ key: 'workspace_id', value: 'default' }],
  group_by: [{ key: 'api_key' }],
};

describe('cost budget, in memory', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: stateWith([COST_POLICY]) });
  });
  after(async () => harness.close());

  test('reserves the worst case, settles to the real cost, refuses what the rest cannot cover (OpenAI shape, naming the policy and what is left)', async () => {
    const first = await send(harness, '/v1/chat/completions', CHAT);
    assert.equal(first.status, 200);
    assert.equal(first.headers.get('x-gateway-budget-policy'), 'team-cost');
    assert.equal(first.headers.get('x-gateway-budget-unit'), 'usd');
    // $0.20 minus this request's worst case (prompt estimated from the body, 20 output tokens).
    const remaining = Number(first.headers.get('x-gateway-budget-remaining'));
    assert.ok(remaining > 0.1 && remaining < 0.16, `remaining ${remaining}`);
    assert.equal(await settledSpend(harness, 'team-cost'), 0.05);
    assert.equal((await send(harness, '/v1/chat/completions', CHAT)).status, 200);
    assert.equal((await send(harness, '/v1/chat/completions', CHAT)).status, 200);
    assert.equal(await settledSpend(harness, 'team-cost'), 0.15);
    // $0.05 left, the worst case is more: refused before any provider call.
    const before = upstream.received.length;
    const refused = await send(harness, '/v1/chat/completions', CHAT);
    assert.equal(refused.status, 429);
    assert.equal(upstream.received.length, before);
    assert.equal(refused.body.error.type, 'budget_exceeded');
    assert.equal(refused.body.error.code, 'AIGW_ERR_BUDGET_EXCEEDED');
    assert.match(refused.body.error.message, /"team dollars" \(team-cost\)/);
    assert.match(refused.body.error.message, /\$0\.050000 of 0\.2 USD left/);
    assert.equal(refused.headers.get('x-gateway-budget-remaining'), '0.050000');
    // A request that fits (fewer output tokens) still passes.
    assert.equal((await send(harness, '/v1/chat/completions', { ...CHAT, max_tokens: 5 })).status, 200);
  });

  test('the spend is in /v1/analytics/budgets and the metrics', async () => {
    const entry = (await analytics(harness)).find((policy) => policy.policy_id === 'team-cost');
    assert.match(entry?.period, /^m\d{4}-\d{2}$/);
    assert.equal(entry?.groups[0].group, 'api_key=test');
    const metrics = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    assert.match(metrics, /aigateway_budget_spent_usd\{policy="team-cost"\} 0\.2/);
    assert.match(metrics, /aigateway_budget_remaining_usd\{policy="team-cost"\} 0(\.0\d*)?\n/);
    assert.match(metrics, /aigateway_budget_decisions_total\{policy="team-cost",result="denied"\} 1/);
  });
});

describe('other routes and shapes', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({
      state: stateWith([
        { id: 'claude-tokens', workspace_id: 'default', type: 'tokens', credit_limit: 500, conditions: [{ key: 'provider', value: 'anthropic' }], group_by: [{ key: 'workspace_id' }] },
        { id: 'all-cost', workspace_id: 'default', type: 'cost', credit_limit: 100, conditions: [{ key: 'provider', value: 'openai' }], group_by: [{ key: 'workspace_id' }], alert_threshold: 0.04, alert_webhook: 'http://127.0.0.1:1/replaced' },
      ]),
    });
  });
  after(async () => harness.close());

  test('/v1/messages is refused in the Anthropic shape', async () => {
    const refused = await send(harness, '/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-virtual-key': 'vk-claude' });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.type, 'error');
    assert.equal(refused.body.error.type, 'rate_limit_error');
    assert.match(refused.body.error.message, /Budget exceeded: usage-limit policy "claude-tokens" has 500 tokens of 500 tokens left/);
    const fits = await send(harness, '/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 100, messages: [{ role: 'user', content: 'hi' }] }, { 'x-gateway-virtual-key': 'vk-claude' });
    assert.equal(fits.status, 200);
    assert.equal(fits.headers.get('x-gateway-budget-unit'), 'tokens');
  });

  test('embeddings are charged their prompt; a cache hit is charged nothing and says so', async () => {
    const embedded = await send(harness, '/v1/embeddings', { model: 'budget-model', input: 'hello' });
    assert.equal(embedded.status, 200);
    assert.equal(await settledSpend(harness, 'all-cost'), 0.01);
    const miss = await send(harness, '/v1/chat/completions', CHAT, { 'x-gateway-config': 'cached' });
    assert.equal(miss.headers.get('x-gateway-cache-status'), 'MISS');
    assert.equal(miss.headers.get('x-gateway-budget-charged'), null);
    assert.equal(await settledSpend(harness, 'all-cost'), 0.06);
    const hit = await send(harness, '/v1/chat/completions', CHAT, { 'x-gateway-config': 'cached' });
    assert.equal(hit.headers.get('x-gateway-cache-status'), 'HIT');
    assert.equal(hit.headers.get('x-gateway-budget-charged'), '0');
    assert.equal(await settledSpend(harness, 'all-cost'), 0.06);
  });

  test('a forwarded route with a priced model reserves and settles to the answer\'s usage; /v1/responses is charged too', async () => {
    const before = await settledSpend(harness, 'all-cost');
    const moderated = await send(harness, '/v1/moderations', { model: 'budget-model', input: 'hello' });
    assert.equal(moderated.status, 200);
    assert.equal(moderated.headers.get('x-gateway-budget-policy'), 'all-cost');
    // The mock answers with usage 10 + 20: $0.05.
    assert.equal(Math.round((await settledSpend(harness, 'all-cost')) * 1e6) - Math.round(before * 1e6), 50_000);
    const responded = await send(harness, '/v1/responses', { model: 'budget-model', input: 'hello', max_output_tokens: 20 });
    assert.equal(responded.headers.get('x-gateway-budget-policy'), 'all-cost');
    assert.equal(Math.round((await settledSpend(harness, 'all-cost')) * 1e6) - Math.round(before * 1e6), 100_000);
  });

  test('a stream the client leaves is charged its prompt and the events it was sent, never zero', async () => {
    const before = await settledSpend(harness, 'all-cost');
    // A raw socket, destroyed once three content events arrived: the client is gone mid-stream.
    const body = JSON.stringify({ ...CHAT, stream: true, messages: [{ role: 'user', content: 'HOLD-STREAM' }] });
    await new Promise<void>((resolve, reject) => {
      const request = http.request(`${harness.gateway.origin}/v1/chat/completions`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-up' },
      });
      request.on('error', () => resolve());
      request.on('response', (response) => {
        let seen = '';
        response.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes('w2')) {
            request.destroy();
            resolve();
          }
        });
        response.on('error', () => resolve());
      });
      request.on('timeout', () => reject(new Error('timeout')));
      request.end(body);
    });
    await eventually(() => upstream.aborted > 0, 'the upstream stream to be cut');
    const charged = (await eventually(async () => {
      const spent = await settledSpend(harness, 'all-cost');
      return spent > before ? { spent } : undefined;
    }, 'the aborted stream to be charged')).spent - before;
    // At least the prompt estimate (the body's bytes / 4 at $0.001) plus the 3 events read at $0.002.
    assert.ok(charged >= 0.006 + 0.02, `charged ${charged}`);
    assert.ok(charged <= 0.05 + 0.01, `charged ${charged}`);
  });
  test('a /v1/messages stream the client leaves is charged its input and the output it was sent', async () => {
    const before = await settledSpend(harness, 'claude-tokens');
    const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 50, stream: true, messages: [{ role: 'user', content: 'HOLD-STREAM' }] });
    const aborted = upstream.aborted;
    await new Promise<void>((resolve) => {
      const request = http.request(`${harness.gateway.origin}/v1/messages`, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-claude' },
      });
      request.on('error', () => resolve());
      request.on('response', (response) => {
        let seen = '';
        response.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen.includes('w2 ')) {
            request.destroy();
            resolve();
          }
        });
        response.on('error', () => resolve());
      });
      request.end(body);
    });
    await eventually(() => upstream.aborted > aborted, 'the upstream stream to be cut');
    const charged = (await eventually(async () => {
      const spent = await settledSpend(harness, 'claude-tokens');
      return spent > before ? { spent } : undefined;
    }, 'the aborted stream to be charged')).spent - before;
    // 10 input tokens (message_start) and at least the three text deltas it was sent.
    assert.ok(charged >= 10 + 3, `charged ${charged} tokens`);
  });
});

describe('alerts and the policies API', () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({ state: stateWith([]) });
  });
  after(async () => harness.close());

  const api = (method: string, path: string, body?: unknown) =>
    fetch(`${harness.gateway.origin}${path}`, {
      method,
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (response) => ({ status: response.status, body: (await response.json()) as Record<string, any> }));

  test('invalid policies are refused with the field at fault', async () => {
    const base = { type: 'cost', credit_limit: 1, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] };
    const threshold = await api('POST', '/v1/policies/usage-limits', { ...base, alert_threshold: 2 });
    assert.equal(threshold.status, 400);
    assert.equal(threshold.body.error.param, 'alert_threshold');
    const zone = await api('POST', '/v1/policies/usage-limits', { ...base, periodic_reset: 'daily', time_zone: 'Mars/Olympus' });
    assert.equal(zone.status, 400);
    assert.equal(zone.body.error.param, 'time_zone');
    assert.equal((await api('POST', '/v1/policies/usage-limits', { ...base, credit_limit: -1 })).status, 400);
  });

  test('a policy created through the API is listed and enforced; crossing its alert threshold POSTs the webhook once', async () => {
    const created = await api('POST', '/v1/policies/usage-limits', {
      type: 'cost',
      credit_limit: 1,
      alert_threshold: 0.08,
      alert_webhook: hook.url,
      periodic_reset: 'daily',
      time_zone: 'America/New_York',
      max_reservation: 0.5,
      fail_open: false,
      conditions: [{ key: 'model', value: 'budget-model' }],
      group_by: [{ key: 'api_key' }],
    });
    assert.equal(created.status, 200);
    assert.equal(created.body.object, 'usage_limit_policy');
    const id = created.body.id as string;
    const listed = await api('GET', '/v1/policies/usage-limits');
    assert.deepEqual(listed.body.data.map((policy: { id: string }) => policy.id), [id]);
    assert.equal(listed.body.data[0].fail_open, false);
    assert.equal((await send(harness, '/v1/chat/completions', CHAT)).headers.get('x-gateway-budget-policy'), id);
    assert.equal(hook.calls.length, 0);
    assert.equal((await send(harness, '/v1/chat/completions', CHAT)).status, 200);
    const alert = (await eventually(() => hook.calls[0], 'the alert webhook')) as Record<string, unknown>;
    assert.equal(alert['policy_id'], id);
    assert.equal(alert['type'], 'budget.alert_threshold_crossed');
    assert.equal(alert['spent'], 0.1);
    assert.equal((await send(harness, '/v1/chat/completions', CHAT)).status, 200);
    await settledSpend(harness, id);
    assert.equal(hook.calls.length, 1);
    // Archived: no longer enforced.
    assert.equal((await api('PATCH', `/v1/policies/usage-limits/${id}`, { status: 'archived' })).status, 200);
    assert.equal((await send(harness, '/v1/chat/completions', CHAT)).headers.get('x-gateway-budget-policy'), null);
  });
});

describe('store outage', () => {
  test('fail_open admits (counted and logged), fail_open false refuses with 503', { timeout: 20_000 }, async (t) => {
    const silent = await silentServer();
    t.after(() => silent.close());
    const policy = { id: 'outage', workspace_id: 'default', type: 'cost', credit_limit: 1, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] };
    const open = await startHarness({ state: stateWith([policy]), budgetStore: new RedisBudgetStore({ url: silent.url, commandTimeoutMs: 50 }) });
    try {
      assert.equal((await send(open, '/v1/chat/completions', CHAT)).status, 200);
      const metrics = await (await fetch(`${open.gateway.origin}/metrics`)).text();
      assert.match(metrics, /aigateway_budget_decisions_total\{policy="outage",result="error_open"\} 1/);
      assert.ok(open.logs.some((line) => line['msg'] === 'budget store unavailable; admitting (policies fail open)'));
    } finally {
      await open.close();
    }
    const closed = await startHarness({ state: stateWith([{ ...policy, fail_open: false }]), budgetStore: new RedisBudgetStore({ url: silent.url, commandTimeoutMs: 50 }) });
    try {
      const refused = await send(closed, '/v1/chat/completions', CHAT);
      assert.equal(refused.status, 503);
      assert.equal(refused.body.error.code, 'AIGW_ERR_STORE_UNAVAILABLE');
    } finally {
      await closed.close();
    }
  });
});
