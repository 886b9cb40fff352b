import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileGuardrails } from '../../../proxy/guardrails/compile-guardrails.ts';
import { runAfterHooks, runBeforeHooks } from '../../../proxy/guardrails/run-hooks.ts';
import { compileIssues } from './check-table.ts';

interface Received {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: Record<string, unknown>;
}

type Answer = { status?: number; json?: unknown; raw?: string } | 'hold';

/** A webhook on 127.0.0.1:0 whose answer per path the test sets; 'hold' never answers. */
class FakeWebhook {
  readonly received: Received[] = [];
  readonly answers = new Map<string, Answer>();
  private readonly server: Server;
  url = '';

  constructor() {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const path = request.url ?? '/';
        this.received.push({ path, headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
        const answer = this.answers.get(path) ?? { json: { verdict: true } };
        if (answer === 'hold') return;
        response.writeHead(answer.status ?? 200, { 'content-type': 'application/json' });
        response.end(answer.raw ?? JSON.stringify(answer.json));
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

const hook = new FakeWebhook();
before(() => hook.start());
after(() => hook.stop());

const chat = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello there' }] };

function guardrail(path: string, extra: Record<string, unknown> = {}, settings: Record<string, unknown> = {}) {
  return compileGuardrails({ input_guardrails: [{ ...settings, webhook: { webhookURL: `${hook.url}${path}`, ...extra } }] }, new Map());
}

describe('default.webhook', () => {
  it('posts the request with the configured headers and passes on verdict true', async () => {
    hook.answers.set('/ok', { json: { verdict: true, data: { score: 0.1 } } });
    const outcome = await runBeforeHooks(guardrail('/ok', { headers: { 'x-api-key': 'k1' } }), {
      endpoint: 'chat.completions',
      requestBody: chat,
      metadata: { team: 'a' },
      model: 'gpt-4o-mini',
      provider: 'openai',
    });
    assert.equal(outcome.verdict, true);
    const received = hook.received.findLast((item) => item.path === '/ok');
    assert.equal(received?.headers['x-api-key'], 'k1');
    assert.equal(received?.headers['content-type'], 'application/json');
    assert.deepEqual(received?.body, {
      eventType: 'beforeRequestHook',
      endpoint: 'chat.completions',
      request: { json: chat, text: 'hello there' },
      metadata: { team: 'a' },
      model: 'gpt-4o-mini',
      provider: 'openai',
    });
    assert.deepEqual(outcome.results[0]?.checks[0]?.data, { webhookURL: `${hook.url}/ok`, status: 200, response: { score: 0.1 } });
  });

  it('fails on verdict false, and passes with not: true', async () => {
    hook.answers.set('/no', { json: { verdict: false } });
    const failed = await runBeforeHooks(guardrail('/no'), { endpoint: 'chat.completions', requestBody: chat });
    assert.equal(failed.verdict, false);
    const inverted = await runBeforeHooks(guardrail('/no', { not: true }), { endpoint: 'chat.completions', requestBody: chat });
    assert.equal(inverted.verdict, true);
  });

  it('replaces the request body with transformedData.request.json', async () => {
    const replaced = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hello [name]' }] };
    hook.answers.set('/rewrite', { json: { verdict: true, transformedData: { request: { json: replaced }, response: { json: { ignored: true } } } } });
    const outcome = await runBeforeHooks(guardrail('/rewrite'), { endpoint: 'chat.completions', requestBody: chat });
    assert.deepEqual(outcome.requestBody, replaced);
    assert.equal(outcome.results[0]?.transformed, true);
  });

  it('sends the answer after the call and may replace it', async () => {
    hook.answers.set('/after', { json: { verdict: true, transformedData: { response: { json: { choices: [] } } } } });
    const compiled = compileGuardrails({ output_guardrails: [{ webhook: { webhookURL: `${hook.url}/after` } }] }, new Map());
    const responseBody = { object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: 'hi!' } }] };
    const outcome = await runAfterHooks(compiled, { endpoint: 'chat.completions', requestBody: chat, responseBody });
    assert.deepEqual(outcome.responseBody, { choices: [] });
    const received = hook.received.findLast((item) => item.path === '/after');
    assert.equal(received?.body['eventType'], 'afterRequestHook');
    assert.deepEqual(received?.body['response'], { json: responseBody, text: 'hi!' });
    assert.deepEqual(received?.body['request'], { json: chat });
  });

  // The webhook holds its answer forever: only the check's own timeout can end the call.
  it('reports a timeout as an error that passes, or fails with fail_on_error', { timeout: 10_000 }, async () => {
    hook.answers.set('/slow', 'hold');
    const passed = await runBeforeHooks(guardrail('/slow', { timeout: 50 }), { endpoint: 'chat.completions', requestBody: chat });
    assert.equal(passed.verdict, true);
    assert.deepEqual(passed.results[0]?.checks[0]?.error, { message: 'webhook timed out after 50 ms' });

    const failed = await runBeforeHooks(guardrail('/slow', { timeout: 50 }, { fail_on_error: true, deny: true }), {
      endpoint: 'chat.completions',
      requestBody: chat,
    });
    assert.equal(failed.verdict, false);
    assert.equal(failed.denied, true);
  });

  it('uses the engine default timeout when the check sets none', async () => {
    hook.answers.set('/slow-default', 'hold');
    const outcome = await runBeforeHooks(guardrail('/slow-default'), { endpoint: 'chat.completions', requestBody: chat }, { webhookTimeoutMs: 30 });
    assert.equal(outcome.results[0]?.checks[0]?.error?.message, 'webhook timed out after 30 ms');
  });

  it('stops waiting when the request is aborted', async () => {
    hook.answers.set('/abandoned', 'hold');
    const controller = new AbortController();
    const pending = runBeforeHooks(guardrail('/abandoned', { timeout: 60_000 }), { endpoint: 'chat.completions', requestBody: chat, signal: controller.signal });
    controller.abort();
    const outcome = await pending;
    assert.equal(outcome.results[0]?.checks[0]?.error?.message, 'request aborted before the webhook answered');
  });

  const broken: Array<[string, Answer, RegExp]> = [
    ['a non-2xx status', { status: 503, json: { verdict: true } }, /status 503/],
    ['an answer that is not JSON', { raw: 'OK' }, /not JSON/],
    ['an answer without a boolean verdict', { json: { verdict: 'yes' } }, /boolean "verdict"/],
  ];
  for (const [name, answer, message] of broken) {
    it(`reports ${name} as an error`, async () => {
      const path = `/broken-${encodeURIComponent(name)}`;
      hook.answers.set(path, answer);
      const outcome = await runBeforeHooks(guardrail(path), { endpoint: 'chat.completions', requestBody: chat });
      assert.match(outcome.results[0]?.checks[0]?.error?.message ?? '', message);
      assert.equal(outcome.verdict, true);
    });
  }

  it('uses the fetch it is given (the egress-guarded one in the gateway)', async () => {
    const calls: string[] = [];
    const fetchSpy: typeof fetch = async (input, init) => {
      calls.push(String(input));
      return fetch(input, init);
    };
    await runBeforeHooks(guardrail('/ok'), { endpoint: 'chat.completions', requestBody: chat }, { fetch: fetchSpy });
    assert.deepEqual(calls, [`${hook.url}/ok`]);
  });

  const bad: Array<[Record<string, unknown>, string]> = [
    [{}, '.webhookURL: Required'],
    [{ webhookURL: 'ftp://example.com/x' }, '.webhookURL: must be an http(s) URL'],
    [{ webhookURL: 'https://example.com', timeout: 0 }, '.timeout: must be at least 1'],
    [{ webhookURL: 'https://example.com', headers: { a: 1 } }, '.headers.a: must be a string'],
  ];
  for (const [parameters, expected] of bad) {
    it(`rejects ${JSON.stringify(parameters)}`, () => {
      const issues = compileIssues('default.webhook', parameters);
      assert.ok(issues.some((issue) => issue.startsWith('input_guardrails[0]["default.webhook"]') && issue.includes(expected)), JSON.stringify(issues));
    });
  }
});
