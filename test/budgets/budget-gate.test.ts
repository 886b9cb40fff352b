// The reservation in flight while the request is prepared (issue 30): without input
// guardrails or a cache in the request's config, the Redis reservation is awaited at the
// routing leaf, not before. A refusal must still be the budget's 429 with nothing sent
// upstream, whatever the walk met meanwhile (an open circuit, a missing provider), and an
// admitted request must still carry the remaining-budget headers and be settled.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { RedisBudgetStore } from '../../proxy/budgets/redis-budget-store.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { admin, PREFIX, REDIS_URL, skip } from '../helpers/redis-test-kit.ts';
import { startBudgetUpstream, type BudgetUpstream } from './budget-upstream.ts';

// $0.001 per prompt token, $0.002 per completion token: a default answer (10 + 20) costs $0.05.
const PRICES = [{ model: 'budget-model', inputPerMillion: 1000, outputPerMillion: 2000 }];
const CHAT = { model: 'budget-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };
const CB = { failure_threshold: 1, cooldown_interval: 600_000 };
const MICRO = 1_000_000;

/** A port nothing listens on: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A budget counter's fields in Redis once no reservation is open: spent and used agree. */
async function settled(key: string): Promise<number> {
  return eventually(async () => {
    const [used, spent] = await admin.hmget(key, 'u', 's');
    // Wrapped: a spend of 0 is a settled answer too.
    return used !== null && used === spent ? { spent: Number(spent) } : undefined;
  }, `${key} to settle`, { timeoutMs: 15_000 }).then((value) => value.spent);
}

describe('a budget reservation awaited at the routing leaf (Redis)', { skip }, () => {
  let upstream: BudgetUpstream;
  let harness: Harness;
  before(async () => {
    upstream = await startBudgetUpstream();
    const dead = `http://127.0.0.1:${await closedPort()}/v1`;
    harness = await startHarness({
      state: baseState({
        providers: [
          { slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: `${upstream.origin}/v1` },
          { slug: 'claude', provider: 'anthropic', virtualKey: 'vk-claude', apiKey: 'sk-ant-up', customHost: `${upstream.origin}/v1` },
          { slug: 'dead', provider: 'openai', apiKey: 'sk-dead', customHost: dead },
        ],
        configs: [
          { id: 'single-cb', config: { provider: '@dead', cb_config: CB } },
          { id: 'lb-cb', config: { strategy: { mode: 'loadbalance' }, cb_config: CB, targets: [{ name: 'only', provider: '@dead' }] } },
        ],
        modelPrices: PRICES,
        usageLimitPolicies: [
          { id: 'roomy', type: 'cost', credit_limit: 100, conditions: [{ key: 'metadata.budget', value: 'roomy' }], group_by: [{ key: 'api_key' }] },
          { id: 'broke', type: 'cost', credit_limit: 0.000001, conditions: [{ key: 'metadata.budget', value: 'broke' }], group_by: [{ key: 'api_key' }] },
        ],
      }),
      budgetStore: new RedisBudgetStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 1000 }),
    });
  });
  after(async () => {
    await harness.close();
    await upstream.close();
  });

  async function send(path: string, body: unknown, budget: string, headers: Record<string, string> = {}) {
    const response = await fetch(`${harness.gateway.origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-metadata': JSON.stringify({ budget }), ...headers },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, body: (await response.json().catch(() => undefined)) as Record<string, any> };
  }

  test('a refused request gets the budget 429 (OpenAI shape) and the upstream receives nothing', async () => {
    const sent = upstream.received.length;
    const refused = await send('/v1/chat/completions', CHAT, 'broke', { 'x-gateway-virtual-key': 'vk-up' });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'AIGW_ERR_BUDGET_EXCEEDED');
    assert.equal(refused.body.error.type, 'budget_exceeded');
    assert.equal(refused.headers.get('x-gateway-budget-policy'), 'broke');
    // It reports no walk, as when the reservation was awaited before routing.
    assert.equal(refused.headers.get('x-gateway-provider'), null);
    assert.equal(refused.headers.get('x-gateway-retry-attempt-count'), null);
    assert.equal(upstream.received.length, sent);
  });

  test('a refused request on /v1/messages gets the budget 429 in Anthropic shape, nothing sent', async () => {
    const sent = upstream.received.length;
    const body = { model: 'budget-model', max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] };
    const refused = await send('/v1/messages', body, 'broke', { 'x-gateway-virtual-key': 'vk-claude', 'anthropic-version': '2023-06-01' });
    assert.equal(refused.status, 429);
    assert.equal(refused.body.type, 'error');
    assert.match(refused.body.error.message, /Budget exceeded/);
    assert.equal(upstream.received.length, sent);
  });

  test('a refused request whose only target has an open circuit still gets the budget 429', async () => {
    // Admitted requests fail against the closed port and open both circuits (threshold 1).
    for (const config of ['single-cb', 'lb-cb']) {
      const failed = await send('/v1/chat/completions', CHAT, 'roomy', { 'x-gateway-config': config });
      assert.ok(failed.status >= 500, `${config}: ${failed.status}`);
      const open = await send('/v1/chat/completions', CHAT, 'roomy', { 'x-gateway-config': config });
      assert.equal(open.status, 503, `${config}: the circuit is open`);
      assert.equal(open.body.error.code, 'AIGW_ERR_TARGETS_UNAVAILABLE');
    }
    // A leaf that awaits the refusal before its breaker, and a loadbalance that finds no leaf at all.
    for (const config of ['single-cb', 'lb-cb']) {
      const refused = await send('/v1/chat/completions', CHAT, 'broke', { 'x-gateway-config': config });
      assert.equal(refused.status, 429, `${config}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error.code, 'AIGW_ERR_BUDGET_EXCEEDED');
    }
  });

  test('a refused request whose target cannot be resolved gets the budget 429, not the config error', async () => {
    const missing = { 'x-gateway-config': JSON.stringify({ provider: '@nowhere' }) };
    const admitted = await send('/v1/chat/completions', CHAT, 'roomy', missing);
    assert.equal(admitted.body.error.code, 'AIGW_ERR_UNKNOWN_PROVIDER');
    const refused = await send('/v1/chat/completions', CHAT, 'broke', missing);
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'AIGW_ERR_BUDGET_EXCEEDED');
  });

  test('an admitted request carries the remaining-budget headers and is settled to its real cost', async () => {
    const key = `${PREFIX}{budget}:roomy:all:api_key=test`;
    // The failures above settled to nothing (no answer, no charge), or this is the first use.
    const before = (await admin.exists(key)) === 1 ? await settled(key) : 0;
    const sent = upstream.received.length;
    const admitted = await send('/v1/chat/completions', CHAT, 'roomy', { 'x-gateway-virtual-key': 'vk-up' });
    assert.equal(admitted.status, 200);
    assert.equal(admitted.headers.get('x-gateway-budget-policy'), 'roomy');
    assert.equal(admitted.headers.get('x-gateway-budget-unit'), 'usd');
    const remaining = Number(admitted.headers.get('x-gateway-budget-remaining'));
    assert.ok(remaining > 99 && remaining < 100, `remaining ${remaining}`);
    assert.equal(upstream.received.length, sent + 1);
    await eventually(async () => ((await settled(key)) === before + 0.05 * MICRO ? true : undefined), 'the spend settled');
  });
});
