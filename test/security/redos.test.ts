// Finding 3: a conditional-routing `$regex` such as `^(a+)+$` against a long model name
// pinned the event loop for minutes (backtracking RegExp). User patterns now compile on the
// linear-time engine (patterns/user-regex.ts): nested quantifiers are refused with a 400,
// and the shapes a static check misses run in linear time. Inputs here are small enough that
// a backtracking build answers wrongly within seconds instead of hanging the suite.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { compileQuery } from '../../proxy/config/conditional-query.ts';

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  mock = await startMockOpenAI();
  harness = await startHarness({ state: baseState() });
});

after(async () => {
  await harness?.close();
  await mock?.close();
});

function conditional(pattern: string): string {
  return JSON.stringify({
    strategy: { mode: 'conditional', conditions: [{ query: { 'params.model': { $regex: pattern } }, then: 'a' }], default: 'b' },
    targets: [
      { name: 'a', provider: 'openai', api_key: 'sk-client-0000000000000000000000000', custom_host: mock.url },
      { name: 'b', provider: 'openai', api_key: 'sk-client-0000000000000000000000000', custom_host: mock.url },
    ],
  });
}

async function chat(config: string, model: string): Promise<{ status: number; body: { error?: { code?: string; param?: string | null; message?: string } } }> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': config },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  return { status: response.status, body: (await response.json()) as never };
}

describe('user patterns cannot backtrack', () => {
  test('a nested quantifier is refused with a 400 naming the query', { timeout: 30_000 }, async () => {
    const { status, body } = await chat(conditional('^(a+)+$'), `${'a'.repeat(27)}!`);
    assert.equal(status, 400);
    assert.equal(body.error?.code, 'AIGW_ERR_INVALID_CONFIG');
    assert.match(body.error?.message ?? '', /strategy\.conditions\[0\]\.query\.params\.model\.\$regex: may backtrack/);
  });

  test('shapes the static check misses run in linear time on the engine', { timeout: 30_000 }, () => {
    // `(a|a)*$` and `(a|aa)*b` pass a star-height check but backtrack exponentially in V8.
    for (const pattern of ['^(a|a)*$', '^(a|aa)*b$']) {
      const predicate = compileQuery({ 'params.model': { $regex: pattern } });
      const hostile = `${'a'.repeat(26)}!`;
      assert.equal(predicate({ metadata: undefined, params: { model: hostile }, url: { pathname: '/v1/chat/completions' } }), false);
      const long = `${'a'.repeat(200_000)}!`;
      assert.equal(predicate({ metadata: undefined, params: { model: long }, url: { pathname: '/v1/chat/completions' } }), false);
    }
  });

  test('the gateway keeps answering while a hostile pattern is sent inline', { timeout: 30_000 }, async () => {
    const hostile = `${'a'.repeat(100_000)}!`;
    const answers = await Promise.all([chat(conditional('^(a|a)*$'), hostile), fetch(`${harness.gateway.origin}/health`).then((r) => r.status)]);
    assert.equal(answers[0].status, 200, JSON.stringify(answers[0].body));
    assert.equal(answers[1], 200);
  });

  test('lookarounds and backreferences are refused (the engine cannot run them linearly)', async () => {
    for (const pattern of ['(?=a)a', '(a)\\1']) {
      const { status, body } = await chat(conditional(pattern), 'gpt-4o');
      assert.equal(status, 400, pattern);
      assert.match(body.error?.message ?? '', /linear-time regex engine/);
    }
  });
});
