// The rest of the OpenAI API forwarded, with the official openai SDK: moderations, images
// (JSON and multipart), audio (binary speech, multipart transcriptions/translations),
// responses retrieve/delete/cancel/input_items, fine-tuning job events, /v1/models (the
// provider's list and the gateway's own). Alongside the batches plugin, whose routes share
// path prefixes with these.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import { batchesPlugin } from '../../proxy/batches/batches-plugin.ts';
import { mockAudio, multipartFields, SPEECH_BYTES, startMockOpenAIForwarded, type MockOpenAIForwarded } from '../fixtures/mock-openai-forwarded.ts';
import { startMockAnthropic, type MockAnthropic } from '../fixtures/mock-anthropic.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';

const KEY = 'sk-forwarded-provider-key-123';
let mock: MockOpenAIForwarded;
let anthropic: MockAnthropic;
let harness: Harness;
let dataDir: string;
let client: OpenAI;

before(async () => {
  mock = await startMockOpenAIForwarded(KEY);
  anthropic = await startMockAnthropic({ apiKey: 'sk-ant-models' });
  dataDir = await mkdtemp(join(tmpdir(), 'aigw-forwarded-'));
  harness = await startHarness({
    state: baseState({
      providers: [
        { slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: KEY, customHost: mock.url },
        { slug: 'claude', provider: 'anthropic', virtualKey: 'vk-claude', apiKey: 'sk-ant-models', customHost: anthropic.url },
      ],
      configs: [
        { id: 'fast', config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@up', override_params: { model: 'gpt-4.1-mini' } }, { provider: '@claude', override_params: { model: 'claude-haiku-4-5' } }] } },
        { id: 'smart', config: { provider: '@claude', override_params: { model: 'claude-opus-4-6' } } },
      ],
    }),
    plugins: [batchesPlugin({ store: { kind: 'sqlite', path: join(dataDir, 'batches.sqlite') } })],
  });
  client = harness.client({ 'x-gateway-virtual-key': 'vk-up' });
});

after(async () => {
  await harness.close();
  await mock.close();
  await anthropic.close();
  await rm(dataDir, { recursive: true, force: true });
});

beforeEach(() => {
  mock.reset();
  anthropic.reset();
});

function last() {
  const request = mock.requests.at(-1);
  assert.ok(request !== undefined, 'the provider was called');
  return request;
}

describe('forwarded OpenAI routes', () => {
  test('moderations: the JSON body goes as sent, with the saved key; no gateway key upstream', async () => {
    const { data, response } = await client.moderations.create({ model: 'omni-moderation-latest', input: 'I will kill the process' }).withResponse();
    assert.equal(data.results[0]?.flagged, true);
    assert.equal(response.headers.get('x-gateway-provider'), 'openai');
    assert.equal(response.headers.get('set-cookie'), null, 'only allow-listed headers are relayed');
    const upstream = last();
    assert.equal(upstream.path, '/v1/moderations');
    assert.equal(upstream.headers['authorization'], `Bearer ${KEY}`);
    assert.equal(upstream.headers['x-gateway-api-key'], undefined);
    assert.deepEqual(JSON.parse(upstream.body.toString()), { model: 'omni-moderation-latest', input: 'I will kill the process' });
  });

  test('images: generations (JSON), edits and variations (multipart streamed through)', async () => {
    const generated = await client.images.generate({ model: 'gpt-image-1', prompt: 'a cat' });
    assert.equal(Buffer.from(generated.data?.[0]?.b64_json ?? '', 'base64').toString(), 'png-bytes');
    const png = Buffer.alloc(70_000, 7);
    const edited = await client.images.edit({ model: 'gpt-image-1', image: await toFile(png, 'cat.png', { type: 'image/png' }), prompt: 'add a hat' });
    assert.equal(Buffer.from(edited.data?.[0]?.b64_json ?? '', 'base64').toString(), `edited ${png.length} bytes`);
    const fields = multipartFields(last().headers['content-type'] ?? '', last().body);
    assert.equal(fields['prompt'], 'add a hat');
    assert.equal(last().path, '/v1/images/edits');
    const varied = await client.images.createVariation({ image: await toFile(png, 'cat.png', { type: 'image/png' }) });
    assert.ok((varied.data?.length ?? 0) > 0);
    assert.equal(last().path, '/v1/images/variations');
  });

  test('audio speech: a multi-megabyte binary answer streams back byte for byte', async () => {
    const response = await client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'Hello' });
    assert.equal(response.headers.get('content-type'), 'audio/mpeg');
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.equal(bytes.length, SPEECH_BYTES);
    assert.ok(bytes.equals(mockAudio(SPEECH_BYTES)));
  });

  test('audio transcriptions and translations: multipart uploads reach the provider whole', async () => {
    const audio = mockAudio(1_234_567);
    const transcription = await client.audio.transcriptions.create({ model: 'whisper-1', file: await toFile(audio, 'speech.mp3', { type: 'audio/mpeg' }) });
    assert.equal(transcription.text, `heard ${audio.length} bytes with whisper-1`);
    assert.match(last().headers['content-type'] ?? '', /^multipart\/form-data; boundary=/);
    const translation = await client.audio.translations.create({ model: 'whisper-1', file: await toFile(audio.subarray(0, 1000), 'speech.mp3') });
    assert.equal(translation.text, 'heard 1000 bytes with whisper-1');
  });

  test('responses: retrieve, input_items, cancel and delete', async () => {
    const retrieved = await client.responses.retrieve('resp_123');
    assert.equal(retrieved.id, 'resp_123');
    assert.equal(last().path, '/v1/responses/resp_123');
    const items = await client.responses.inputItems.list('resp_123', { limit: 5 });
    assert.equal(items.data[0]?.id, 'msg_in_1');
    assert.equal(last().path, '/v1/responses/resp_123/input_items?limit=5');
    const cancelled = await client.responses.cancel('resp_123');
    assert.equal(cancelled.status, 'cancelled');
    await client.responses.delete('resp_123');
    assert.equal(last().method, 'DELETE');
  });

  test('fine-tuning job events next to the batches plugin’s fine-tuning routes', async () => {
    const events = await client.fineTuning.jobs.listEvents('ftjob-abc', { limit: 2 });
    assert.equal(events.data[0]?.message, 'Job ftjob-abc started');
    assert.equal(last().path, '/v1/fine_tuning/jobs/ftjob-abc/events?limit=2');
  });

  test("the provider's errors come back OpenAI-shaped, its key redacted", async () => {
    const wrong = harness.client({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': mock.url }, { apiKey: 'sk-wrong-key-456' });
    const error = await wrong.moderations.create({ input: 'x' }).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.AuthenticationError);
    assert.ok(!error.message.includes('sk-wrong-key-456'), error.message);
  });

  test('a custom host outside the egress policy is refused with 400 before any call', async () => {
    const outside = harness.client({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': 'http://10.255.255.1:9/v1' }, { apiKey: 'sk-x' });
    const error = await outside.moderations.create({ input: 'x' }).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.equal((error.error as { code?: string }).code, 'AIGW_ERR_EGRESS_DENIED');
  });

  test('a non-OpenAI provider gets 400 naming the route', async () => {
    const error = await harness.client({ 'x-gateway-virtual-key': 'vk-claude' }).moderations.create({ input: 'x' }).catch((caught: unknown) => caught);
    assert.ok(error instanceof OpenAI.BadRequestError);
    assert.match(error.message, /\/v1\/moderations/);
  });

  test('the gateway key is required', async () => {
    const response = await fetch(`${harness.gateway.url}/images/generations`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-gateway-virtual-key': 'vk-up' }, body: '{"prompt":"x"}' });
    assert.equal(response.status, 401);
    assert.equal(mock.requests.length, 0);
  });
});

describe('/v1/models', () => {
  test("without provider headers: the models the saved configs route to", async () => {
    const gateway = new OpenAI({ baseURL: harness.gateway.url, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'x-gateway-api-key': TEST_GATEWAY_KEY } });
    const ids = [];
    for await (const model of gateway.models.list()) ids.push([model.id, model.owned_by]);
    assert.deepEqual(ids, [
      ['gpt-4.1-mini', 'openai'],
      ['claude-haiku-4-5', 'anthropic'],
      ['claude-opus-4-6', 'anthropic'],
    ]);
    const one = await gateway.models.retrieve('claude-opus-4-6');
    assert.equal(one.owned_by, 'anthropic');
    const missing = await gateway.models.retrieve('nope').catch((caught: unknown) => caught);
    assert.ok(missing instanceof OpenAI.NotFoundError);
    assert.equal(mock.requests.length, 0);
  });

  test('a saved config names its own models', async () => {
    const ids = [];
    for await (const model of harness.client({ 'x-gateway-config': 'smart' }).models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['claude-opus-4-6']);
  });

  test("with a provider: that provider's own list and model (ids with slashes and colons)", async () => {
    const ids = [];
    for await (const model of client.models.list()) ids.push(model.id);
    assert.deepEqual(ids, ['gpt-4.1', 'ft:gpt-4.1:acme::abc']);
    const model = await client.models.retrieve('ft:gpt-4.1:acme::abc');
    assert.equal(model.id, 'ft:gpt-4.1:acme::abc');
    const slashed = await client.models.retrieve('openai/gpt-4.1');
    assert.equal(slashed.id, 'openai/gpt-4.1');
    assert.equal(last().path, '/v1/models/openai%2Fgpt-4.1');
  });

  test("Anthropic's model list translated to OpenAI's shape", async () => {
    anthropic.enqueue({ status: 200, body: { data: [{ type: 'model', id: 'claude-opus-4-6', display_name: 'Claude Opus 4.6', created_at: '2026-02-05T00:00:00Z' }], has_more: false, first_id: 'claude-opus-4-6', last_id: 'claude-opus-4-6' } });
    const list = await harness.client({ 'x-gateway-virtual-key': 'vk-claude' }).models.list();
    assert.deepEqual(list.data, [{ id: 'claude-opus-4-6', object: 'model', created: Date.parse('2026-02-05T00:00:00Z') / 1000, owned_by: 'anthropic' }]);
    assert.equal(anthropic.requests[0]?.headers['x-api-key'], 'sk-ant-models');
    assert.equal(anthropic.requests[0]?.path, '/v1/models?limit=1000');
  });
});
