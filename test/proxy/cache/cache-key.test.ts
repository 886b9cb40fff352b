import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { canonicalJson, conversationText, semanticPartition, simpleCacheKey, type CacheKeyInput } from '../../../proxy/cache/cache-key.ts';

const IDENTITY = 'openai|api.openai.com|gpt-4o-mini';

const body = (): Record<string, unknown> => ({
  model: 'gpt-4o-mini',
  messages: [
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: [{ type: 'text', text: 'Hi' }, { type: 'image_url', image_url: { url: 'https://x/a.png', detail: 'low' } }] },
  ],
  temperature: 0.2,
  tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } } } } }],
  response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'object' } } },
});

const key = (overrides: Partial<CacheKeyInput> = {}): string =>
  simpleCacheKey({ workspace: 'team-a', endpoint: 'chat.completions', identity: IDENTITY, body: body(), metadata: { team: 'a' }, ...overrides });

/** The same JSON value with every object's keys in reverse order, at every depth. */
function reverseKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reverseKeys);
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reverseKeys(v)]));
  }
  return value;
}

describe('simple cache key', () => {
  test('is a sha256 hex digest and deterministic', () => {
    assert.match(key(), /^[0-9a-f]{64}$/);
    assert.equal(key(), key());
  });

  test('key order never matters, at any depth (body and metadata)', () => {
    const reordered = reverseKeys(body()) as Record<string, unknown>;
    assert.notEqual(JSON.stringify(reordered), JSON.stringify(body()), 'the fixture really is reordered');
    assert.equal(key({ body: reordered }), key());
    assert.equal(key({ metadata: { b: 1, a: { y: 1, x: 2 } } }), key({ metadata: { a: { x: 2, y: 1 }, b: 1 } }));
  });

  test('stream, stream_options and user are ignored', () => {
    const streamed = { ...body(), stream: true, stream_options: { include_usage: true }, user: 'end-user-42' };
    assert.equal(key({ body: streamed }), key());
    assert.equal(key({ body: { ...body(), stream: false } }), key());
  });

  test('any other body change changes the key', () => {
    const base = key();
    const variants: Array<(b: Record<string, unknown>) => void> = [
      (b) => (b['temperature'] = 0.3),
      (b) => (b['model'] = 'gpt-4o'),
      (b) => (b['n'] = 2),
      (b) => (b['seed'] = 1),
      (b) => (b['max_tokens'] = 10),
      (b) => ((b['messages'] as unknown[]).reverse()),
      (b) => ((b['messages'] as Array<Record<string, unknown>>)[0]!['content'] = 'You are verbose.'),
      (b) => (((b['messages'] as Array<Record<string, unknown>>)[1]!['content'] as Array<Record<string, unknown>>)[0]!['text'] = 'Hi!'),
      (b) => ((((b['tools'] as Array<Record<string, Record<string, unknown>>>)[0]!['function']!['parameters'] as Record<string, Record<string, unknown>>)['properties']!['a'] = { type: 'integer' })),
      (b) => ((b['response_format'] as Record<string, unknown>)['type'] = 'json_object'),
      (b) => (b['stop'] = ['\n']),
      (b) => (b['metadata'] = { in: 'body' }),
    ];
    const seen = new Set([base]);
    for (const [i, change] of variants.entries()) {
      const changed = body();
      change(changed);
      const k = key({ body: changed });
      assert.ok(!seen.has(k), `variant ${i} must change the key`);
      seen.add(k);
    }
  });

  test('null and absent differ; number formatting does not', () => {
    assert.notEqual(key({ body: { ...body(), seed: null } }), key());
    assert.equal(key({ body: { ...body(), temperature: 2e-1 } }), key());
    assert.equal(key({ body: { ...body(), absent: undefined } }), key());
  });

  test('without a namespace: workspace, organisation, endpoint, target identity and metadata are part of the key', () => {
    assert.notEqual(key({ workspace: 'team-b' }), key());
    assert.notEqual(key({ organisation: 'org-2' }), key());
    assert.notEqual(key({ endpoint: 'completions' }), key());
    assert.notEqual(key({ identity: 'anthropic|api.anthropic.com|gpt-4o-mini' }), key());
    assert.notEqual(key({ metadata: { team: 'b' } }), key());
    assert.notEqual(key({ metadata: {} }), key());
    assert.equal(key({ metadata: undefined }), key({ metadata: {} }));
  });

  test('a namespace narrows within the workspace and target: it ignores metadata only', () => {
    const ns = key({ namespace: 'tenant-1' });
    assert.notEqual(ns, key(), 'namespaced entries are separate from unnamespaced ones');
    assert.notEqual(key({ namespace: 'tenant-2' }), ns);
    assert.equal(key({ namespace: 'tenant-1', metadata: { team: 'b', user: 'x' } }), ns);
    assert.equal(key({ namespace: 'tenant-1', metadata: undefined }), ns);
    // Still the workspace, the target, the endpoint and the body.
    assert.notEqual(key({ namespace: 'tenant-1', workspace: 'team-b' }), ns);
    assert.notEqual(key({ namespace: 'tenant-1', organisation: 'org-2' }), ns);
    assert.notEqual(key({ namespace: 'tenant-1', identity: 'other|host|model' }), ns);
    assert.notEqual(key({ namespace: 'tenant-1', endpoint: 'completions' }), ns);
    assert.notEqual(key({ namespace: 'tenant-1', body: { ...body(), temperature: 1 } }), ns);
    assert.equal(key({ namespace: 'tenant-1', body: { ...body(), user: 'u', stream: true } }), ns);
  });

  test('an empty namespace counts as none', () => {
    assert.equal(key({ namespace: '' }), key());
  });
});

describe('canonicalJson', () => {
  test('sorts keys at every depth, keeps array order, follows JSON.stringify for the rest', () => {
    assert.equal(canonicalJson({ b: [3, { z: 1, a: null }], a: 'x' }), '{"a":"x","b":[3,{"a":null,"z":1}]}');
    assert.equal(canonicalJson({ u: undefined, n: Number.NaN, arr: [undefined] }), '{"arr":[null],"n":null}');
    assert.equal(canonicalJson('é"\n'), JSON.stringify('é"\n'));
  });
});

describe('semantic partition and conversation text', () => {
  const chat = (text: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
    model: 'gpt-4o-mini',
    temperature: 0,
    messages: [
      { role: 'system', content: 'You answer geography questions.' },
      { role: 'user', content: text },
    ],
    ...extra,
  });
  const partition = (b: Record<string, unknown>, overrides: Partial<CacheKeyInput> & { embedder?: string } = {}): string =>
    semanticPartition({ workspace: 'team-a', endpoint: 'chat.completions', identity: IDENTITY, body: b, embedder: 'lexical-v1:1024', ...overrides });

  test('the embedded text is the last message; the rest of the request is the partition', () => {
    assert.equal(conversationText('chat.completions', chat('Capital of France?')), 'Capital of France?');
    assert.equal(partition(chat('Capital of France?')), partition(chat('What is the capital of France?')));
    assert.equal(partition(chat('a', { stream: true, user: 'u' })), partition(chat('b')));
  });

  test('workspace, model, other parameters, history, namespace, metadata, target and embedder separate partitions', () => {
    const base = partition(chat('q'));
    const others = [
      partition(chat('q', { model: 'gpt-4o' })),
      partition(chat('q', { temperature: 1 })),
      partition(chat('q', { tools: [{ type: 'function', function: { name: 'f' } }] })),
      partition({ ...chat('q'), messages: [{ role: 'system', content: 'You write poems.' }, { role: 'user', content: 'q' }] }),
      partition({ ...chat('q'), messages: [{ role: 'user', content: 'q' }] }),
      partition(chat('q'), { workspace: 'team-b' }),
      partition(chat('q'), { namespace: 'n1' }),
      partition(chat('q'), { metadata: { team: 'a' } }),
      partition(chat('q'), { identity: 'other' }),
      partition(chat('q'), { embedder: 'endpoint:x' }),
      partition(chat('q'), { endpoint: 'completions' }),
    ];
    assert.equal(new Set([base, ...others]).size, others.length + 1);
    // A namespace ignores metadata, as the simple key does, but never the workspace or the target.
    assert.equal(partition(chat('q'), { namespace: 'n1', metadata: { a: 1 } }), partition(chat('q'), { namespace: 'n1' }));
    assert.notEqual(partition(chat('q'), { namespace: 'n1', identity: 'x' }), partition(chat('q'), { namespace: 'n1' }));
    assert.notEqual(partition(chat('q'), { namespace: 'n1', workspace: 'team-b' }), partition(chat('q'), { namespace: 'n1' }));
  });

  test('text parts are embedded; other parts (images) stay exact in the partition', () => {
    const withImage = (text: string, url: string): Record<string, unknown> => ({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'text', text }, { type: 'image_url', image_url: { url } }] }],
    });
    assert.equal(conversationText('chat.completions', withImage('What is this?', 'https://a')), 'What is this?');
    assert.equal(partition(withImage('What is this?', 'https://a')), partition(withImage('What is that?', 'https://a')));
    assert.notEqual(partition(withImage('What is this?', 'https://a')), partition(withImage('What is this?', 'https://b')));
  });

  test('completions embed a single-string prompt; embeddings and other prompts have no text', () => {
    assert.equal(conversationText('completions', { model: 'm', prompt: 'Once upon' }), 'Once upon');
    assert.equal(conversationText('completions', { model: 'm', prompt: ['Once upon'] }), 'Once upon');
    assert.equal(conversationText('completions', { model: 'm', prompt: ['a', 'b'] }), '');
    assert.equal(conversationText('completions', { model: 'm', prompt: [1, 2, 3] }), '');
    assert.equal(conversationText('embeddings', { model: 'm', input: 'hello' }), '');
    assert.equal(conversationText('responses', { model: 'm', input: 'hello' }), '');
  });
});
