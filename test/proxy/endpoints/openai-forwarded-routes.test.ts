// Forwarded uploads are streamed with a cap: past it the upload is cut and the client gets
// 413, without the gateway holding the body. The route table covers the routes and
// leaves out organisation admin operations.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildGatewayState } from '../../../proxy/config/gateway-state.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { GatewayStateSchema } from '../../../proxy/config/state-schema.ts';
import { isGatewayError, toErrorBody } from '../../../proxy/errors.ts';
import { FORWARDED_OPERATIONS, registerForwardedRoutes } from '../../../proxy/endpoints/openai-forwarded-routes.ts';
import { newRequestContext } from '../../../proxy/request-context.ts';
import { createUpstreamAgent } from '../../../proxy/upstream/upstream-agent.ts';
import { startMockOpenAIForwarded, type MockOpenAIForwarded } from '../../fixtures/mock-openai-forwarded.ts';

const KEY = 'sk-forwarded-unit';
let mock: MockOpenAIForwarded;
let app: FastifyInstance;
const agent = createUpstreamAgent();

before(async () => {
  mock = await startMockOpenAIForwarded(KEY);
  const document = GatewayStateSchema.parse({ providers: [{ slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: KEY, customHost: mock.url }], egress: { allow: ['127.0.0.0/8'] } });
  const built = buildGatewayState(document, undefined, 'unit', BUILTIN_GUARDRAIL_COMPILER);
  assert.ok(built.state !== undefined);
  const state = built.state;
  app = Fastify();
  app.decorateRequest('gateway', null as never);
  app.addHook('onRequest', async (request) => {
    request.gateway = newRequestContext('t', state);
  });
  app.setErrorHandler((error, _request, reply) => {
    if (isGatewayError(error)) return reply.code(error.status).send(toErrorBody(error));
    return reply.code(500).send({ message: error instanceof Error ? error.message : String(error) });
  });
  registerForwardedRoutes(app, { dispatcher: agent, maxBodyBytes: 64 * 1024 });
  await app.listen({ port: 0, host: '127.0.0.1' });
});

after(async () => {
  await app.close();
  await mock.close();
  await agent.close();
});

function origin(): string {
  const address = app.server.address();
  assert.ok(address !== null && typeof address === 'object');
  return `http://127.0.0.1:${address.port}`;
}

describe('forwarded uploads', () => {
  test('within the cap: streamed through whole', async () => {
    const body = Buffer.alloc(60 * 1024, 1);
    const response = await fetch(`${origin()}/v1/audio/transcriptions`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'x-gateway-virtual-key': 'vk-up' }, body });
    assert.equal(response.status, 200);
    assert.equal(mock.requests.at(-1)?.body.length, body.length);
  });

  test('past the cap: 413, and the provider never gets a whole body', async () => {
    mock.reset();
    const body = Buffer.alloc(2 * 1024 * 1024, 1);
    const response = await fetch(`${origin()}/v1/audio/transcriptions`, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'x-gateway-virtual-key': 'vk-up' }, body });
    assert.equal(response.status, 413);
    assert.equal((await response.json() as { error: { code: string } }).error.code, 'AIGW_ERR_BODY_TOO_LARGE');
    assert.ok(mock.requests.every((request) => request.body.length < body.length));
  });
});

describe('the forwarded route table', () => {
  const has = (method: string, path: string) => FORWARDED_OPERATIONS.some(([m, p]) => m === method && p === path);
  test('covers the routes the issue names', () => {
    for (const [method, path] of [
      ['POST', '/moderations'],
      ['POST', '/images/generations'],
      ['POST', '/images/edits'],
      ['POST', '/images/variations'],
      ['POST', '/audio/speech'],
      ['POST', '/audio/transcriptions'],
      ['POST', '/audio/translations'],
      ['GET', '/responses/{response_id}'],
      ['DELETE', '/responses/{response_id}'],
      ['POST', '/responses/{response_id}/cancel'],
      ['GET', '/responses/{response_id}/input_items'],
      ['GET', '/fine_tuning/jobs/{fine_tuning_job_id}/events'],
    ] as const) {
      assert.ok(has(method, path), `${method} ${path}`);
    }
  });

  test('leaves out admin operations and what other routes serve', () => {
    assert.ok(!FORWARDED_OPERATIONS.some(([, path]) => path.startsWith('/organization') || path.startsWith('/projects')));
    for (const [method, path] of [['POST', '/chat/completions'], ['POST', '/responses'], ['GET', '/models'], ['POST', '/files'], ['POST', '/batches']] as const) {
      assert.ok(!has(method, path), `${method} ${path}`);
    }
  });
});
