import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { conversationText, semanticPartition } from '../../../proxy/cache/cache-key.ts';
import { MemorySemanticIndex } from '../../../proxy/cache/memory-semantic-index.ts';
import {
  DEFAULT_SEMANTIC_THRESHOLD,
  EmbeddingsEndpointEmbedder,
  LexicalEmbedder,
  cosine,
  unitVector,
  vectorFromEmbeddingsAnswer,
} from '../../../proxy/cache/semantic-cache.ts';
import { embeddingToBase64 } from '../../fixtures/mock-openai-payloads.ts';
import { axis, semanticIndexSuite } from './semantic-index-suite.ts';

semanticIndexSuite('memory', async (bounds) => new MemorySemanticIndex(bounds));

const embedder = new LexicalEmbedder();
const similarity = (a: string, b: string): number => cosine(embedder.vectorize(a), embedder.vectorize(b));

describe('lexical embedder', () => {
  test('is deterministic, unit-length and of the configured size', () => {
    const v = embedder.vectorize('The quick brown fox');
    assert.deepEqual(v, new LexicalEmbedder().vectorize('The quick brown fox'));
    assert.equal(v.length, 1024);
    assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-6);
    assert.equal(new LexicalEmbedder({ dimensions: 64 }).vectorize('x').length, 64);
    assert.equal(new LexicalEmbedder({ dimensions: 64 }).id, 'lexical-v1:64');
  });

  test('case, punctuation, spacing and Unicode width do not matter', () => {
    assert.ok(similarity('Hello, World!', '  hello world ') > 0.999);
    assert.ok(similarity('ＡＢＣ　ｄｅｆ', 'abc def') > 0.999, 'NFKC folds full-width forms');
  });

  test('scores shared wording: word order and added words lower it, unrelated text is near 0', () => {
    const s = (b: string): number => similarity('please tell me what the capital city of france is', b);
    assert.ok(s('Can you please tell me what the capital city of France is?') > 0.9);
    assert.ok(s('city capital the france of is what me tell please') < 0.7, 'same words, scrambled: only the word pairs differ');
    assert.ok(s('How do I bake sourdough bread at home?') < 0.1);
  });

  test('empty text and text without words give the zero vector', () => {
    assert.ok(embedder.vectorize('').every((x) => x === 0));
    assert.ok(embedder.vectorize('?!… ---').every((x) => x === 0));
  });

  test('scripts written without spaces are compared character by character', () => {
    assert.ok(similarity('東京の天気を教えて', '東京の天気を教えてください') > 0.8);
    assert.ok(similarity('東京の天気を教えて', '大阪でおすすめの料理') < 0.2);
  });
});

describe('semantic lookup with the lexical embedder and the memory index', () => {
  const chat = (model: string, question: string): Record<string, unknown> => ({
    model,
    temperature: 0,
    messages: [
      { role: 'system', content: 'You answer geography questions in one sentence.' },
      { role: 'user', content: question },
    ],
  });
  const lookup = (body: Record<string, unknown>) => ({
    partition: semanticPartition({ workspace: 'default', endpoint: 'chat.completions', identity: `openai|api.openai.com|${String(body['model'])}`, body, embedder: embedder.id }),
    text: conversationText('chat.completions', body),
  });
  const THRESHOLD = 0.9;

  test('a paraphrase is a hit above the threshold, a different question and another model are misses', async () => {
    const index = new MemorySemanticIndex();
    const first = lookup(chat('gpt-4o-mini', 'Please tell me what the capital city of France is.'));
    await index.add(first.partition, await embedder.embed(first.text), 'exact-key-1', 60_000);

    const paraphrase = lookup(chat('gpt-4o-mini', 'Can you please tell me what the capital city of France is?'));
    assert.equal(paraphrase.partition, first.partition);
    const hit = await index.search(paraphrase.partition, await embedder.embed(paraphrase.text), THRESHOLD);
    assert.equal(hit?.key, 'exact-key-1');
    assert.ok(hit.score > THRESHOLD && hit.score < DEFAULT_SEMANTIC_THRESHOLD, `score ${hit.score}`);

    const other = lookup(chat('gpt-4o-mini', 'Please tell me what the capital city of Germany is.'));
    assert.equal(await index.search(other.partition, await embedder.embed(other.text), THRESHOLD), undefined);

    const otherModel = lookup(chat('gpt-4o', 'Please tell me what the capital city of France is.'));
    assert.notEqual(otherModel.partition, first.partition);
    assert.equal(await index.search(otherModel.partition, await embedder.embed(otherModel.text), THRESHOLD), undefined);
  });
});

describe('memory semantic index bounds', () => {
  test('the total bound empties the least recently used partitions first', async () => {
    const index = new MemorySemanticIndex({ maxEntries: 6, maxPerPartition: 4 });
    for (let i = 0; i < 3; i++) await index.add('old', axis(i), `old${i}`, 60_000);
    for (let i = 0; i < 3; i++) await index.add('used', axis(i), `used${i}`, 60_000);
    await index.search('used', axis(0), 0.9); // already the most recent; stays so
    for (let i = 0; i < 3; i++) await index.add('new', axis(i), `new${i}`, 60_000);
    assert.deepEqual(index.stats(), { partitions: 2, entries: 6 });
    assert.equal(await index.search('old', axis(2), 0.9), undefined);
    assert.equal((await index.search('used', axis(2), 0.9))?.key, 'used2');
  });

  test('a flood of distinct partitions and entries keeps both bounds', async () => {
    const index = new MemorySemanticIndex({ maxEntries: 500, maxPerPartition: 50 });
    for (let i = 0; i < 5_000; i++) {
      await index.add(`p${i % 37}`, axis(i % 16), `k${i}`, 60_000);
      assert.ok(index.stats().entries <= 500);
    }
    assert.equal(index.stats().entries, 500);
  });

  test('expired entries are skipped with an injected clock, to the millisecond', async () => {
    let now = 0;
    const index = new MemorySemanticIndex({ now: () => now });
    await index.add('p', axis(0), 'k', 1_000);
    now = 999;
    assert.equal((await index.search('p', axis(0), 0.9))?.key, 'k');
    now = 1_000;
    assert.equal(await index.search('p', axis(0), 0.9), undefined);
    assert.deepEqual(index.stats(), { partitions: 0, entries: 0 });
  });
});

describe('vectors', () => {
  test('cosine: 1 for the same direction, 0 for orthogonal, zero or mismatched vectors', () => {
    assert.equal(cosine([1, 2, 3], [2, 4, 6]), 1);
    assert.equal(cosine([1, 0], [0, 1]), 0);
    assert.equal(cosine([1, 0], [-1, 0]), -1);
    assert.equal(cosine([0, 0], [1, 0]), 0);
    assert.equal(cosine([1, 0], [1, 0, 0]), 0);
    assert.ok(Math.abs(cosine(unitVector([3, 4]), [3, 4]) - 1) < 1e-7);
  });

  test('vectorFromEmbeddingsAnswer reads float and base64 embeddings', async () => {
    const vector = [0.5, -0.25, 0.125];
    assert.deepEqual(vectorFromEmbeddingsAnswer({ data: [{ embedding: vector }] }), vector);
    assert.deepEqual(vectorFromEmbeddingsAnswer({ data: [{ embedding: embeddingToBase64(vector) }] }), vector);
    for (const bad of [null, {}, { data: [] }, { data: [{ embedding: ['x'] }] }, { data: [{ embedding: 'abc' }] }]) {
      assert.equal(vectorFromEmbeddingsAnswer(bad), undefined);
    }
    const endpoint = new EmbeddingsEndpointEmbedder('openai-prod/text-embedding-3-small', async (text) => ({ data: [{ embedding: [text.length, 1] }] }));
    assert.equal(endpoint.id, 'endpoint:openai-prod/text-embedding-3-small');
    assert.deepEqual(await endpoint.embed('abc'), [3, 1]);
    await assert.rejects(new EmbeddingsEndpointEmbedder('x', async () => ({ error: {} })).embed('a'), TypeError);
  });
});
