import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MemoryResponseCache } from '../../../proxy/cache/memory-response-cache.ts';
import { MemorySemanticIndex } from '../../../proxy/cache/memory-semantic-index.ts';
import { ResponseCache, type CacheOperation, type CacheRequest } from '../../../proxy/cache/response-cache.ts';
import { type ResponseCacheStore } from '../../../proxy/cache/response-cache-store.ts';
import { LexicalEmbedder } from '../../../proxy/cache/semantic-cache.ts';
import { CacheStoreUnavailableError } from '../../../proxy/errors.ts';

const chat = (question: string, extra: Partial<CacheRequest> = {}): CacheRequest => ({
  mode: 'simple',
  workspace: 'default',
  endpoint: 'chat.completions',
  identity: 'openai|api.openai.com|gpt-4o-mini',
  body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: question }] },
  ...extra,
});

function setup(options: { store?: ResponseCacheStore; threshold?: number } = {}) {
  const errors: CacheOperation[] = [];
  const store = options.store ?? new MemoryResponseCache();
  const cache = new ResponseCache({
    store,
    index: new MemorySemanticIndex(),
    embedder: new LexicalEmbedder(),
    threshold: options.threshold ?? 0.9,
    onError: (_error, operation) => errors.push(operation),
    now: () => 1_000,
  });
  return { cache, store, errors };
}

/** A store whose every call fails as Redis being down does. */
const downStore: ResponseCacheStore = {
  get: async () => Promise.reject(new CacheStoreUnavailableError('down')),
  set: async () => Promise.reject(new CacheStoreUnavailableError('down')),
  delete: async () => Promise.reject(new CacheStoreUnavailableError('down')),
  stats: () => ({ entries: 0, bytes: 0 }),
  close: async () => undefined,
};

describe('response cache decisions', () => {
  test('MISS, then save, then HIT with the stored answer and headers', async () => {
    const { cache } = setup();
    const miss = await cache.lookup(chat('hi'));
    assert.equal(miss.status, 'MISS');
    await cache.save(chat('hi'), miss, '{"answer":1}', { 'openai-model': 'm' });
    const hit = await cache.lookup(chat('hi', { body: { messages: [{ content: 'hi', role: 'user' }], model: 'gpt-4o-mini', stream: true } }));
    assert.equal(hit.status, 'HIT');
    assert.deepEqual(hit.answer, { body: '{"answer":1}', createdAt: 1_000, headers: { 'openai-model': 'm' } });
  });

  test('no mode or an uncached endpoint is DISABLED, and save does nothing', async () => {
    const { cache, store } = setup();
    const off = await cache.lookup(chat('hi', { mode: undefined }));
    assert.deepEqual(off, { status: 'DISABLED' });
    await cache.save(chat('hi', { mode: undefined }), off, '{}');
    assert.equal((await cache.lookup(chat('hi', { endpoint: 'responses' }))).status, 'DISABLED');
    assert.equal(store.stats().entries, 0);
  });

  test('force refresh reads nothing, and its answer replaces the entry', async () => {
    const { cache } = setup();
    await cache.save(chat('hi'), await cache.lookup(chat('hi')), '"old"');
    const refresh = await cache.lookup(chat('hi', { forceRefresh: true }));
    assert.equal(refresh.status, 'REFRESH');
    assert.equal(refresh.answer, undefined);
    await cache.save(chat('hi'), refresh, '"new"');
    assert.equal((await cache.lookup(chat('hi'))).answer?.body, '"new"');
  });

  test('max_age 0 stores nothing; a HIT is never saved again', async () => {
    const { cache, store } = setup();
    await cache.save(chat('a', { maxAgeSeconds: 0 }), await cache.lookup(chat('a')), '{}');
    assert.equal(store.stats().entries, 0);
    await cache.save(chat('b'), await cache.lookup(chat('b')), '"first"');
    const hit = await cache.lookup(chat('b'));
    await cache.save(chat('b'), hit, '"second"');
    assert.equal((await cache.lookup(chat('b'))).answer?.body, '"first"');
  });

  test('semantic: a paraphrase is a SEMANTIC_HIT, another model a MISS; simple mode never matches loosely', async () => {
    const { cache } = setup();
    const first = chat('Please tell me what the capital city of France is.', { mode: 'semantic' });
    await cache.save(first, await cache.lookup(first), '"Paris"');
    const paraphrase = await cache.lookup(chat('Can you please tell me what the capital city of France is?', { mode: 'semantic' }));
    assert.equal(paraphrase.status, 'SEMANTIC_HIT');
    assert.equal(paraphrase.answer?.body, '"Paris"');
    assert.ok((paraphrase.score ?? 0) > 0.9);
    const otherModel = chat('Please tell me what the capital city of France is.', {
      mode: 'semantic',
      identity: 'openai|api.openai.com|gpt-4o',
      body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'Please tell me what the capital city of France is.' }] },
    });
    assert.equal((await cache.lookup(otherModel)).status, 'MISS');
    assert.equal((await cache.lookup(chat('Can you please tell me what the capital city of France is?'))).status, 'MISS');
  });

  test('semantic: a REFRESH is indexed too; a neighbour whose answer is gone is a MISS', async () => {
    const { cache, store } = setup();
    const q = chat('Please tell me what the capital city of France is.', { mode: 'semantic', forceRefresh: true });
    const refresh = await cache.lookup(q);
    await cache.save(q, refresh, '"Paris"');
    const near = chat('Can you please tell me what the capital city of France is?', { mode: 'semantic' });
    assert.equal((await cache.lookup(near)).status, 'SEMANTIC_HIT');
    await store.delete(refresh.key!);
    assert.equal((await cache.lookup(near)).status, 'MISS');
  });

  test('a store that is down gives MISS, never an error, and is reported', async () => {
    const { cache, errors } = setup({ store: downStore });
    const lookup = await cache.lookup(chat('hi', { mode: 'semantic' }));
    assert.equal(lookup.status, 'MISS');
    await cache.save(chat('hi', { mode: 'semantic' }), lookup, '{}');
    assert.deepEqual(errors, ['get', 'set']);
  });

  test('an embedder that fails gives MISS and is reported', async () => {
    const errors: CacheOperation[] = [];
    const cache = new ResponseCache({
      store: new MemoryResponseCache(),
      index: new MemorySemanticIndex(),
      embedder: { id: 'broken', embed: async () => Promise.reject(new Error('embeddings provider down')) },
      onError: (_e, op) => errors.push(op),
    });
    const request = chat('hi', { mode: 'semantic' });
    const lookup = await cache.lookup(request);
    assert.equal(lookup.status, 'MISS');
    await cache.save(request, lookup, '{}');
    assert.equal((await cache.lookup(request)).status, 'HIT', 'the exact entry is stored regardless');
    assert.deepEqual(errors, ['embed', 'embed']);
  });
});
