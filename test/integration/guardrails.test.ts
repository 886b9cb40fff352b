// Hooks and guardrails end to end: 446 / 246 / 200 outcomes with hook_results, no upstream
// call on an input deny, redaction at the upstream, async webhooks off the response path,
// webhook timeouts, streams with and without deny (parsed by the openai SDK), saved
// guardrails, and a pathological regex that cannot block anyone.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI from 'openai';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

let mock: MockOpenAI;
let harness: Harness;
let webhook: http.Server;
let webhookUrl = '';
let webhookCalls = 0;
// Webhook answers held until the test releases them (never, for /stall).
const heldWebhooks: http.ServerResponse[] = [];
function releaseWebhooks(): void {
  for (const response of heldWebhooks.splice(0)) response.writeHead(200, { 'content-type': 'application/json' }).end('{"verdict":true}');
}

before(async () => {
  mock = await startMockOpenAI();
  // A slow webhook: answers pass when the test releases them (or never, for /stall).
  webhook = http.createServer((request, response) => {
    webhookCalls++;
    request.resume();
    if (request.url === '/stall') return;
    heldWebhooks.push(response);
  });
  await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
  webhookUrl = `http://127.0.0.1:${(webhook.address() as AddressInfo).port}`;
  harness = await startHarness({
    state: baseState({
      providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-m', customHost: mock.url }],
      guardrails: [{ id: 'no-secrets', checks: [{ id: 'default.regexMatch', parameters: { rule: 'secret', not: true } }], deny: true }],
    }),
  });
});
after(async () => {
  await harness.close();
  await mock.close();
  webhook.closeAllConnections();
  await new Promise<void>((resolve) => webhook.close(() => resolve()));
});
beforeEach(() => mock.reset());

const chat = (content: string) => ({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] });

async function call(config: unknown, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${harness.gateway.url}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': JSON.stringify(config) },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as Record<string, unknown>;
  return { status: response.status, json };
}

type Results = { before_request_hooks: Array<{ id: string; verdict: boolean; deny: boolean; checks: Array<{ id: string; verdict: boolean; error?: unknown }> }>; after_request_hooks: Array<{ id: string; verdict: boolean }> };
const resultsOf = (json: Record<string, unknown>) => json['hook_results'] as Results;

describe('input hooks and guardrails', () => {
  test('a failing check with deny → 446 with hook_results; the upstream is never called', async () => {
    const config = { provider: '@mock', input_guardrails: [{ id: 'words', deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }] };
    const { status, json } = await call(config, chat('this is forbidden'));
    assert.equal(status, 446);
    assert.equal((json['error'] as { code: string }).code, 'AIGW_ERR_GUARDRAIL_DENIED');
    const results = resultsOf(json);
    assert.equal(results.before_request_hooks[0]?.id, 'words');
    assert.equal(results.before_request_hooks[0]?.verdict, false);
    assert.equal(results.before_request_hooks[0]?.checks[0]?.id, 'default.contains');
    assert.equal(mock.requests.length, 0);
  });

  test('a failing check without deny → 246 with the normal body plus hook_results', async () => {
    const config = { provider: '@mock', before_request_hooks: [{ id: 'length', checks: [{ id: 'default.wordCount', parameters: { minWords: 10 } }] }] };
    const { status, json } = await call(config, chat('too short'));
    assert.equal(status, 246);
    assert.equal(json['object'], 'chat.completion');
    assert.equal(resultsOf(json).before_request_hooks[0]?.verdict, false);
    assert.equal(mock.requests.length, 1);
  });

  test('all checks pass → 200 with hook_results', async () => {
    const config = { provider: '@mock', input_guardrails: [{ 'default.wordCount': { minWords: 1, maxWords: 100 } }] };
    const { status, json } = await call(config, chat('a perfectly fine question'));
    assert.equal(status, 200);
    assert.equal(resultsOf(json).before_request_hooks[0]?.verdict, true);
  });

  test('redaction is visible at the upstream', async () => {
    const config = { provider: '@mock', input_guardrails: [{ 'default.pii': { categories: ['email'], mode: 'redact' } }] };
    const { status } = await call(config, chat('mail me at jane.doe@example.com please'));
    assert.equal(status, 200);
    const sent = JSON.stringify(mock.requests[0]?.json);
    assert.ok(!sent.includes('jane.doe@example.com'));
    assert.match(sent, /\[REDACTED_EMAIL\]/);
  });

  test('a saved guardrail by id', async () => {
    const denied = await call({ provider: '@mock', input_guardrails: ['no-secrets'] }, chat('the secret is 42'));
    assert.equal(denied.status, 446);
    const allowed = await call({ provider: '@mock', input_guardrails: ['no-secrets'] }, chat('nothing to hide'));
    assert.equal(allowed.status, 200);
    const unknown = await call({ provider: '@mock', input_guardrails: ['nope'] }, chat('x'));
    assert.equal(unknown.status, 400);
  });
});

describe('output hooks', () => {
  test('an after-request deny → 446; without deny → 246', async () => {
    const deny = { provider: '@mock', output_guardrails: [{ deny: true, 'default.contains': { words: ['mock'], operator: 'none' } }] };
    const denied = await call(deny, chat('hi'));
    assert.equal(denied.status, 446);
    assert.equal(resultsOf(denied.json).after_request_hooks[0]?.verdict, false);
    const soft = { provider: '@mock', after_request_hooks: [{ id: 'tone', checks: [{ id: 'default.allUppercase', parameters: {} }] }] };
    const failed = await call(soft, chat('hi'));
    assert.equal(failed.status, 246);
    assert.equal((failed.json['choices'] as unknown[]).length, 1);
  });
});

describe('webhooks', () => {
  test('an async hook with a slow webhook does not delay the response', async () => {
    const calls = webhookCalls;
    const config = { provider: '@mock', after_request_hooks: [{ id: 'audit', async: true, checks: [{ id: 'default.webhook', parameters: { webhookURL: `${webhookUrl}/audit`, timeout: 5000 } }] }] };
    // The webhook never answers before the client has its answer.
    const { status } = await call(config, chat('hi'));
    assert.equal(status, 200);
    await eventually(() => webhookCalls === calls + 1, 'the webhook to be called');
    releaseWebhooks();
  });

  test('a webhook that times out is an error that passes (and fails with fail_on_error)', async () => {
    const check = { id: 'default.webhook', parameters: { webhookURL: `${webhookUrl}/stall`, timeout: 100 } };
    const lenient = await call({ provider: '@mock', before_request_hooks: [{ id: 'remote', checks: [check] }] }, chat('hi'));
    assert.equal(lenient.status, 200);
    assert.ok(resultsOf(lenient.json).before_request_hooks[0]?.checks[0]?.error, 'the timeout is reported');
    const strict = await call({ provider: '@mock', before_request_hooks: [{ id: 'remote', deny: true, fail_on_error: true, checks: [check] }] }, chat('hi'));
    assert.equal(strict.status, 446);
  });
});

describe('streams', () => {
  const client = (config: unknown) => harness.client({ 'x-gateway-config': JSON.stringify(config) });

  test('with deny: a passing stream arrives whole with its hook_results; a failing one is a 446', async () => {
    const pass = { provider: '@mock', output_guardrails: [{ deny: true, 'default.contains': { words: ['forbidden'], operator: 'none' } }] };
    let text = '';
    for await (const chunk of await client(pass).chat.completions.create({ ...chat('hi'), stream: true } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)) {
      text += chunk.choices[0]?.delta.content ?? '';
    }
    assert.equal(text, 'Hello from the mock upstream.');
    const block = { provider: '@mock', output_guardrails: [{ deny: true, 'default.contains': { words: ['mock'], operator: 'none' } }] };
    const error = await client(block)
      .chat.completions.create({ ...chat('hi'), stream: true } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)
      .catch((e: unknown) => e);
    assert.ok(error instanceof OpenAI.APIError);
    assert.equal(error.status, 446);
  });

  test('without deny: the stream flows and ends with a hook_results event the SDK tolerates', async () => {
    const config = { provider: '@mock', output_guardrails: [{ 'default.allUppercase': {} }] };
    let text = '';
    let results: unknown;
    for await (const chunk of await client(config).chat.completions.create({ ...chat('hi'), stream: true } as OpenAI.Chat.ChatCompletionCreateParamsStreaming)) {
      text += chunk.choices[0]?.delta.content ?? '';
      const extra = (chunk as unknown as { hook_results?: unknown }).hook_results;
      if (extra !== undefined) results = extra;
    }
    assert.equal(text, 'Hello from the mock upstream.');
    assert.equal((results as Results).after_request_hooks[0]?.verdict, false);
  });
});

describe('regex safety', () => {
  test('a pathological regex is refused at validation and never blocks other requests', async () => {
    const evil = { provider: '@mock', input_guardrails: [{ 'default.regexMatch': { rule: '(a+)+$' } }] };
    const [refused, normal] = await Promise.all([call(evil, chat(`${'a'.repeat(40)}!`)), call({ provider: '@mock' }, chat('hello'))]);
    assert.equal(refused.status, 400);
    assert.equal(normal.status, 200);
  });
});

describe('metrics', () => {
  test('checks are counted by check and verdict', async () => {
    const text = await (await fetch(`${harness.gateway.origin}/metrics`)).text();
    assert.match(text, /aigateway_guardrail_checks_total\{check="default\.contains",verdict="fail"\} [1-9]/);
    assert.match(text, /aigateway_guardrail_check_duration_seconds_count\{check="default\.wordCount"\} [1-9]/);
  });
});
