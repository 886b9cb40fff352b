import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import type { FastifyError, FastifyInstance } from 'fastify';
import { promptRoutes } from '../../../operator/api/prompt-routes.ts';
import type { PromptSource } from '../../../operator/api/prompt-routes.ts';
import { isGatewayError, toErrorBody } from '../../../proxy/errors.ts';
import { PromptEntrySchema } from '../../../proxy/prompts/prompt-schema.ts';
import type { PromptEntry } from '../../../proxy/prompts/prompt-schema.ts';

const WELCOME = PromptEntrySchema.parse({
  id: 'welcome',
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are {{tone}}.' },
    { role: 'user', content: 'Hi, I am {{name}}.' },
  ],
  parameters: { temperature: 0.2, max_tokens: 64 },
});

// A map the test can change, like a reloaded state snapshot.
const prompts = new Map<string, PromptEntry>([[WELCOME.id, WELCOME]]);
const source: PromptSource = { getPrompt: (id) => prompts.get(id) };

let app: FastifyInstance;
let origin: string;

before(async () => {
  app = Fastify();
  // The host server's job, reduced to its essence: GatewayError → OpenAI-shaped error.
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    if (isGatewayError(error)) return reply.code(error.status).send(toErrorBody(error));
    const status = error.statusCode ?? 500;
    return reply.code(status).send({ error: { message: error.message, type: 'invalid_request_error', param: null, code: null } });
  });
  await app.register(promptRoutes(source));
  origin = await app.listen({ port: 0, host: '127.0.0.1' });
});

after(() => app.close());

async function post(promptId: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${origin}/v1/prompts/${encodeURIComponent(promptId)}/render`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

function errorOf(json: Record<string, unknown>): Record<string, unknown> {
  assert.equal(typeof json.error, 'object');
  return json.error as Record<string, unknown>;
}

describe('POST /v1/prompts/:promptId/render', () => {
  it('answers 200 with success and the rendered chat-completion parameters', async () => {
    const { status, json } = await post('welcome', { variables: { tone: 'terse', name: 'Ada' }, temperature: 0.7, stream: true });
    assert.equal(status, 200);
    assert.deepEqual(json, {
      success: true,
      data: {
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Hi, I am Ada.' },
        ],
        temperature: 0.7,
        max_tokens: 64,
        stream: true,
      },
    });
  });

  it('answers 404 for an unknown prompt id, naming promptId', async () => {
    const { status, json } = await post('nope', { variables: {} });
    assert.equal(status, 404);
    assert.deepEqual(json, {
      error: { message: 'Prompt "nope" not found', type: 'not_found_error', param: 'promptId', code: 'AIGW_ERR_NOT_FOUND' },
    });
  });

  it('sees prompts the source gains later (a reload)', async () => {
    const later = PromptEntrySchema.parse({ id: 'team/later', messages: [{ role: 'user', content: '{{q}}' }] });
    prompts.set(later.id, later);
    const { status, json } = await post('team/later', { variables: { q: 'why?' } });
    assert.equal(status, 200);
    assert.deepEqual(json, { success: true, data: { messages: [{ role: 'user', content: 'why?' }] } });
  });

  const badRequests: Array<{ name: string; body: unknown; param: string; message: RegExp }> = [
    { name: 'hyperparameters nested under a key', body: { variables: { tone: 't', name: 'n' }, hyperparameters: { temperature: 1 } }, param: 'hyperparameters', message: /root/ },
    { name: 'variables missing', body: { temperature: 1 }, param: 'variables', message: /"variables" is required.*tone, name/ },
    { name: 'variables not an object', body: { variables: 'Ada' }, param: 'variables', message: /must be an object/ },
    { name: 'missing variables, all listed', body: { variables: {} }, param: 'variables', message: /^Missing variables: tone, name$/ },
    { name: 'an unknown root key', body: { variables: { tone: 't', name: 'n' }, max_tokenz: 5 }, param: 'max_tokenz', message: /did you mean "max_tokens"/ },
    { name: 'a hyperparameter out of range', body: { variables: { tone: 't', name: 'n' }, top_p: 5 }, param: 'top_p', message: /^top_p: must be at most 1$/ },
  ];
  for (const row of badRequests) {
    it(`answers 400 for ${row.name}`, async () => {
      const { status, json } = await post('welcome', row.body);
      assert.equal(status, 400);
      const error = errorOf(json);
      assert.equal(error.type, 'invalid_request_error');
      assert.equal(error.code, 'AIGW_ERR_INVALID_BODY');
      assert.equal(error.param, row.param);
      assert.match(String(error.message), row.message);
    });
  }

  it('answers 400 for a body that is not an object', async () => {
    const { status, json } = await post('welcome', ['variables']);
    assert.equal(status, 400);
    assert.equal(errorOf(json).code, 'AIGW_ERR_INVALID_BODY');
  });
});
