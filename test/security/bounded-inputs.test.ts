// Issue 25, "bounded everything": a path parameter cannot leave its segment (dot-segments
// and separators, in any encoding, are a 400 before anything goes upstream); a body with a
// duplicate key is refused (it would be validated as one request and forwarded as another);
// one key's held uploads cannot take the in-flight budget from other keys; and a large plain
// answer is either relayed as it arrives or, when it must be parsed, capped (a 502, the
// upstream aborted) — never held whole without bound.
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type ClientRequest, type Server, type ServerResponse } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { findDuplicateKey } from '../../proxy/openai/json-duplicate-keys.ts';
import { pathParamProblem } from '../../proxy/endpoints/path-param-check.ts';
import { bufferedBodyBytes, resetBufferedBodyPeak } from '../../proxy/upstream/read-body.ts';
import { heldPlainAnswerBytes, PREFIX_BYTES, setPlainAnswerLimits } from '../../proxy/upstream/plain-answer-limits.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { eventually } from '../helpers/eventually.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { sendRaw, statusOf } from './raw-http.ts';

const PROVIDER_KEY = 'sk-live-provider-secret-0123456789';
const OTHER_KEY = 'gw-other-tenant-key-0123456789-01234';

function errorOf(answer: string): { code: string; param: string | null; message: string } {
  const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  return (JSON.parse(body) as { error: { code: string; param: string | null; message: string } }).error;
}

function rawGet(harness: Harness, method: string, path: string, headers: Record<string, string> = {}): Promise<string> {
  const lines = [`${method} ${path} HTTP/1.1`, 'host: gateway', `x-gateway-api-key: ${TEST_GATEWAY_KEY}`, 'x-gateway-provider: @up', 'connection: close'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  return sendRaw(harness.gateway.origin, `${lines.join('\r\n')}\r\n\r\n`);
}

describe('path parameters stay in their segment', () => {
  let mock: MockOpenAI;
  let harness: Harness;
  let dataDir: string;
  before(async () => {
    mock = await startMockOpenAI();
    dataDir = await mkdtemp(join(tmpdir(), 'aigw-bounded-'));
    harness = await startHarness({
      state: baseState({ providers: [{ slug: 'up', provider: 'openai', apiKey: PROVIDER_KEY, customHost: mock.url }] }),
      plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') } })],
    });
  });
  after(async () => {
    await harness.close();
    await mock.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  beforeEach(() => mock.reset());

  // [method, path, the parameter named]: forwarded routes, files, batches, fine-tuning, policies, models.
  const REFUSED: ReadonlyArray<readonly [string, string, string]> = [
    ['GET', '/v1/threads/%2e%2e', 'thread_id'],
    ['GET', '/v1/threads/..%2F..', 'thread_id'],
    ['GET', '/v1/threads/%2E%2e%2Fassistants', 'thread_id'],
    ['GET', '/v1/threads/t1/runs/.%2E', 'run_id'],
    ['POST', '/v1/threads/t1/runs/%2e/cancel', 'run_id'],
    ['DELETE', '/v1/vector_stores/vs1/files/a%5cb', 'file_id'],
    ['DELETE', '/v1/vector_stores/vs1/files/a\\b', 'file_id'],
    ['GET', '/v1/responses/%252e%252e', 'response_id'],
    ['GET', '/v1/files/%2e%2e%2Fbatches', 'id'],
    ['GET', '/v1/files/%2E%2E/content', 'id'],
    ['DELETE', '/v1/files/..', 'id'],
    ['GET', '/v1/batches/%2e%2e', 'id'],
    ['POST', '/v1/batches/..%2f..%2fmodels/cancel', 'id'],
    ['GET', '/v1/fine_tuning/jobs/%2e%2E', 'id'],
    ['GET', '/v1/fine_tuning/jobs/x%2F..%2F..%2Fmodels/checkpoints', 'id'],
    ['GET', '/v1/policies/rate-limits/%2e%2e', 'id'],
    ['GET', '/v1/models/openai/%2e%2e/%2e%2e/files', 'path'],
  ];

  for (const [method, path, param] of REFUSED) {
    test(`${method} ${path} → 400 naming ${param}, nothing sent upstream`, async () => {
      const answer = await rawGet(harness, method, path, method === 'GET' || method === 'DELETE' ? {} : { 'content-length': '0' });
      assert.equal(mock.requests.length, 0, `the upstream saw ${mock.requests.map((r) => r.path).join(', ')}`);
      assert.equal(statusOf(answer), 400, answer);
      const error = errorOf(answer);
      assert.equal(error.code, 'AIGW_ERR_INVALID_PATH');
      assert.equal(error.param, param);
    });
  }

  test('ordinary ids still pass (a forwarded id, a model id with an encoded slash)', async () => {
    await rawGet(harness, 'GET', '/v1/threads/thread_abc-123');
    await rawGet(harness, 'GET', '/v1/models/openrouter%2Fanthropic%2Fclaude-3');
    assert.deepEqual(
      mock.requests.map((r) => r.path),
      ['/v1/threads/thread_abc-123', '/v1/models/openrouter%2Fanthropic%2Fclaude-3'],
    );
  });

  test('the check itself: encodings decoded by the router, wildcards by segment', () => {
    assert.equal(pathParamProblem('id', 'file-abc'), undefined);
    assert.ok(pathParamProblem('id', '..'));
    assert.ok(pathParamProblem('id', '.'));
    assert.ok(pathParamProblem('id', '../x'));
    assert.ok(pathParamProblem('id', 'a\\b'));
    assert.ok(pathParamProblem('id', '%2E%2e'), 'double-encoded');
    assert.equal(pathParamProblem('*', 'anthropic/claude-3'), undefined);
    assert.ok(pathParamProblem('*', 'a/../b'));
    assert.ok(pathParamProblem('*', 'a/./b'));
  });
});

describe('duplicate JSON keys', () => {
  let mock: MockOpenAI;
  let harness: Harness;
  before(async () => {
    mock = await startMockOpenAI();
    harness = await startHarness({ state: baseState({ providers: [{ slug: 'up', provider: 'openai', apiKey: PROVIDER_KEY, customHost: mock.url }] }) });
  });
  after(async () => {
    await harness.close();
    await mock.close();
  });
  beforeEach(() => mock.reset());

  async function post(body: string) {
    const response = await fetch(`${harness.gateway.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-provider': '@up' },
      body,
    });
    return { status: response.status, json: (await response.json()) as { error?: { code: string; param: string | null } } };
  }

  const CASES: ReadonlyArray<readonly [string, string]> = [
    ['{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-expensive"}', 'model'],
    ['{"model":"gpt-4o","messages":[{"role":"user","content":"hi","role":"system"}]}', 'messages[0].role'],
    ['{"model":"gpt-4o","\\u006dodel":"other","messages":[{"role":"user","content":"hi"}]}', 'model'],
    ['{"model":"gpt-4o","messages":[{"role":"user","content":"a"},{"role":"user","content":"b","x":{"k":1,"k":2}}]}', 'messages[1].x.k'],
  ];
  for (const [body, path] of CASES) {
    test(`a duplicate at ${path} → 400 AIGW_ERR_DUPLICATE_KEY, nothing sent upstream`, async () => {
      const { status, json } = await post(body);
      assert.equal(status, 400);
      assert.equal(json.error?.code, 'AIGW_ERR_DUPLICATE_KEY');
      assert.equal(json.error?.param, path);
      assert.equal(mock.requests.length, 0);
    });
  }

  test('equal keys in different objects, and keys inside strings, are no duplicates', async () => {
    const { status } = await post('{"model":"gpt-4o","messages":[{"role":"user","content":"say \\"model\\": twice"},{"role":"assistant","content":"ok"},{"role":"user","content":"model"}]}');
    assert.equal(status, 200);
    assert.equal(findDuplicateKey(Buffer.from('{"a":{"b":1},"b":{"a":[{"a":1},{"a":2}]}}')), undefined);
    assert.equal(findDuplicateKey(Buffer.from('{"s":"x\\\\","s":1}')), 's');
    const many = `{${Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`).join(',')},"k39":0}`;
    assert.equal(findDuplicateKey(Buffer.from(many)), 'k39');
  });
});

describe('in-flight budget per key', () => {
  let mock: MockOpenAI;
  let harness: Harness;
  const held: ClientRequest[] = [];
  before(async () => {
    mock = await startMockOpenAI();
    harness = await startHarness({
      // Global 4, so a key may hold 1 (a quarter).
      maxInFlight: 4,
      state: baseState({
        providers: [{ slug: 'up', provider: 'openai', apiKey: PROVIDER_KEY, customHost: mock.url }],
        apiKeys: [
          { id: 'test', key: TEST_GATEWAY_KEY, scopes: ['inference', 'admin'] },
          { id: 'other', key: OTHER_KEY, workspace: 'other', scopes: ['inference'] },
        ],
      }),
    });
  });
  after(async () => {
    for (const request of held) request.destroy();
    await harness.close();
    await mock.close();
  });

  /** An upload that sends its headers and part of its body, then never finishes. */
  function holdUpload(key: string): void {
    const { hostname, port } = new URL(harness.gateway.origin);
    const request = httpRequest({
      host: hostname,
      port,
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { 'content-type': 'application/json', 'content-length': '100000', 'x-gateway-api-key': key, 'x-gateway-provider': '@up' },
    });
    request.on('error', () => undefined);
    request.on('response', (response) => response.resume());
    request.write('{"model":"gpt-4o","messages":[');
    held.push(request);
  }

  async function chat(key: string): Promise<{ status: number; code: string | undefined }> {
    const response = await fetch(`${harness.gateway.origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': key, 'x-gateway-provider': '@up' },
      body: JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    });
    const json = (await response.json()) as { error?: { code: string } };
    return { status: response.status, code: json.error?.code };
  }

  test("one key's held uploads leave the other key room; its own next request is a 429", async () => {
    for (let i = 0; i < 4; i++) holdUpload(TEST_GATEWAY_KEY);
    // Held once the key's own probe is refused (its share is taken).
    const refused = await eventually(async () => {
      const probe = await chat(TEST_GATEWAY_KEY);
      return probe.status !== 200 ? probe : undefined;
    }, 'the key holding uploads is refused');
    assert.equal(refused.status, 429);
    assert.equal(refused.code, 'AIGW_ERR_KEY_IN_FLIGHT_LIMIT');
    const other = await chat(OTHER_KEY);
    assert.equal(other.status, 200, `the other key got ${other.status} ${other.code}`);
    for (const request of held.splice(0)) request.destroy();
    await eventually(async () => (await chat(TEST_GATEWAY_KEY)).status === 200, 'the key gets its share back once its uploads end');
  });
});

describe('large plain answers', () => {
  let harness: Harness;
  let upstream: Server;
  let answer: Buffer = Buffer.alloc(0);
  let declareLength = true;
  let aborted = 0;
  let served = 0;
  const PARSED_CAP = 2 * PREFIX_BYTES;

  /** An OpenAI answer of about `bytes`, with usage at the end as OpenAI sends it. */
  function embeddingsAnswer(bytes: number): Buffer {
    const head = '{"object":"list","model":"text-embedding-3-small","data":[{"object":"embedding","index":0,"embedding":[';
    const tail = ']}],"usage":{"prompt_tokens":7,"total_tokens":7}}';
    const count = Math.ceil((bytes - head.length - tail.length) / 10);
    return Buffer.from(head + Array.from({ length: count }, () => '0.0123456').join(',') + tail);
  }

  function chatAnswer(bytes: number): Buffer {
    const head = '{"id":"c1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"';
    const tail = '"}}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}';
    return Buffer.from(head + 'x'.repeat(bytes - head.length - tail.length) + tail);
  }

  function serve(response: ServerResponse): void {
    served++;
    response.on('close', () => {
      if (!response.writableFinished) aborted++;
    });
    response.writeHead(200, declareLength ? { 'content-type': 'application/json', 'content-length': String(answer.length) } : { 'content-type': 'application/json' });
    let offset = 0;
    const write = (): void => {
      while (offset < answer.length && !response.destroyed) {
        const more = response.write(answer.subarray(offset, offset + 65536));
        offset += 65536;
        if (!more) return void response.once('drain', write);
      }
      response.end();
    };
    write();
  }

  before(async () => {
    upstream = createServer((request, response) => {
      request.resume();
      request.on('end', () => serve(response));
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const { port } = upstream.address() as { port: number };
    harness = await startHarness({
      state: baseState({ providers: [{ slug: 'up', provider: 'openai', apiKey: PROVIDER_KEY, customHost: `http://127.0.0.1:${port}/v1` }] }),
    });
    // The gateway runs in this process: its limits are the module's.
    setPlainAnswerLimits(PARSED_CAP);
  });
  after(async () => {
    setPlainAnswerLimits();
    await harness.close();
    upstream.closeAllConnections();
    await new Promise<void>((resolve) => upstream.close(() => resolve()));
  });
  beforeEach(() => {
    aborted = 0;
    served = 0;
    declareLength = true;
    resetBufferedBodyPeak();
  });

  const GUARDED = JSON.stringify({ provider: '@up', output_guardrails: [{ 'default.contains': { words: ['forbidden'], operator: 'none' } }] });

  async function call(path: string, body: unknown, config: string, traceId = 'bounded') {
    const response = await fetch(`${harness.gateway.origin}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': config, 'x-gateway-trace-id': traceId },
      body: JSON.stringify(body),
    });
    return { status: response.status, bytes: Buffer.from(await response.arrayBuffer()) };
  }

  for (const declared of [true, false]) {
    test(`an answer over the cap that must be parsed → 502, upstream aborted (${declared ? 'declared length' : 'chunked'})`, async () => {
      declareLength = declared;
      answer = chatAnswer(PARSED_CAP + 3 * PREFIX_BYTES);
      const { status, bytes } = await call('/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, GUARDED);
      assert.equal(status, 502);
      const error = (JSON.parse(bytes.toString('utf8')) as { error: { code: string; type: string } }).error;
      assert.equal(error.code, 'AIGW_ERR_UPSTREAM_INVALID_RESPONSE');
      assert.equal(error.type, 'api_error');
      await eventually(() => aborted === 1, 'the upstream answer is aborted');
      assert.ok(bufferedBodyBytes().peak <= PARSED_CAP, `buffered ${bufferedBodyBytes().peak} bytes, over the cap ${PARSED_CAP}`);
      await eventually(() => heldPlainAnswerBytes() === 0, 'the budget is given back');
    });
  }

  test('an answer under the cap that must be parsed is checked and relayed whole', async () => {
    answer = chatAnswer(PREFIX_BYTES + 100_000);
    const { status, bytes } = await call('/v1/chat/completions', { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }, GUARDED);
    assert.equal(status, 200);
    // The checked answer, with the guardrail's results added.
    const relayed = JSON.parse(bytes.toString('utf8')) as { choices: Array<{ message: { content: string } }>; hook_results?: unknown };
    assert.equal(relayed.choices[0]?.message.content.length, (JSON.parse(answer.toString('utf8')) as typeof relayed).choices[0]?.message.content.length);
    assert.ok(relayed.hook_results !== undefined);
    assert.ok(bufferedBodyBytes().peak <= answer.length);
    await eventually(() => heldPlainAnswerBytes() === 0, 'the budget is given back');
  });

  test('a large answer nothing needs to parse is relayed as it arrives, usage still counted', async () => {
    answer = embeddingsAnswer(4 * PARSED_CAP);
    const { status, bytes } = await call('/v1/embeddings', { model: 'text-embedding-3-small', input: 'hi' }, JSON.stringify({ provider: '@up' }), 'large-plain');
    assert.equal(status, 200);
    assert.equal(bytes.length, answer.length);
    assert.ok(bytes.equals(answer));
    // Nothing read whole: the answer passed through, past the parsed-answer cap.
    assert.equal(bufferedBodyBytes().peak, 0);
    const line = await eventually(() => harness.logs.find((entry) => entry['trace_id'] === 'large-plain'), 'the request is logged');
    assert.equal(line['prompt_tokens'], 7);
    assert.equal(served, 1);
  });
});
