// Workspaces are a tenancy boundary for the response cache: an answer stored for one
// workspace is never served to another — not for the same saved config, not under the same
// x-gateway-cache-namespace, not as a semantic neighbour of a paraphrase — and a namespace
// never lets one target's answer serve another target. Within a workspace the cache is
// shared as before. End to end against the in-memory store and the Redis store; the Redis
// semantic index is driven directly.
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, test } from 'node:test';
import { RedisResponseCache } from '../../proxy/cache/redis-response-cache.ts';
import { RedisSemanticIndex } from '../../proxy/cache/redis-semantic-index.ts';
import { ResponseCache, type CacheRequest } from '../../proxy/cache/response-cache.ts';
import type { ResponseCacheStore } from '../../proxy/cache/response-cache-store.ts';
import { LexicalEmbedder } from '../../proxy/cache/semantic-cache.ts';
import { startMockAnthropic, type MockAnthropic } from '../fixtures/mock-anthropic.ts';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { PREFIX, REDIS_URL, skip as redisSkip } from '../helpers/redis-test-kit.ts';

const TEAM_A = 'gw-tenancy-team-a-key-0123456789abcdef';
const TEAM_A_OTHER = 'gw-tenancy-team-a-second-0123456789ab';
const TEAM_B = 'gw-tenancy-team-b-key-0123456789abcdef';
const ANTHROPIC_KEY = 'sk-ant-tenancy-cache-key';
const SECRET = 'team A confidential: the merger closes on Friday';

interface Stores {
  cacheStore?: ResponseCacheStore;
}

function tenancySuite(name: string, stores: () => Stores, skip: string | false = false): void {
  describe(`the cache never crosses workspaces or targets (${name})`, { skip }, () => {
    let oa: MockOpenAI;
    let oaOther: MockOpenAI;
    let anthropic: MockAnthropic;
    let harness: Harness;

    before(async () => {
      oa = await startMockOpenAI();
      oaOther = await startMockOpenAI();
      anthropic = await startMockAnthropic({ apiKey: ANTHROPIC_KEY });
      const state = baseState({
        providers: [
          { slug: 'oa', provider: 'openai', apiKey: 'sk-oa', customHost: oa.url },
          { slug: 'oa-other', provider: 'openai', apiKey: 'sk-oa-other', customHost: oaOther.url },
          { slug: 'claude', provider: 'anthropic', apiKey: ANTHROPIC_KEY, customHost: anthropic.url },
        ],
        configs: [
          { id: 'shared', config: { provider: '@oa', cache: { mode: 'simple' } } },
          { id: 'shared-other-target', config: { provider: '@oa-other', cache: { mode: 'simple' } } },
          { id: 'shared-semantic', config: { provider: '@oa', cache: { mode: 'semantic' } } },
          { id: 'claude-cached', config: { provider: '@claude', cache: { mode: 'simple' } } },
          { id: 'claude-semantic', config: { provider: '@claude', cache: { mode: 'semantic' } } },
        ],
        cache: { semanticThreshold: 0.8 },
      });
      (state['apiKeys'] as unknown[]).push(
        { id: 'team-a', key: TEAM_A, workspace: 'team-a', scopes: ['inference'] },
        { id: 'team-a-second', key: TEAM_A_OTHER, workspace: 'team-a', scopes: ['inference'] },
        { id: 'team-b', key: TEAM_B, workspace: 'team-b', scopes: ['inference'] },
      );
      harness = await startHarness({ state, ...stores() });
    });
    after(async () => {
      await harness.close();
      await Promise.all([oa.close(), oaOther.close(), anthropic.close()]);
    });
    beforeEach(() => {
      oa.reset();
      oaOther.reset();
      anthropic.reset();
      oa.setReplyText(SECRET);
      oaOther.setReplyText(SECRET);
    });

    async function chat(key: string, config: string, content: string, headers: Record<string, string> = {}) {
      const response = await fetch(`${harness.gateway.url}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-gateway-api-key': key, 'x-gateway-config': config, ...headers },
        body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content }] }),
      });
      return { status: response.status, cache: response.headers.get('x-gateway-cache-status'), text: await response.text() };
    }

    async function messages(key: string, config: string, content: string, headers: Record<string, string> = {}) {
      const response = await fetch(`${harness.gateway.url}/messages`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-gateway-api-key': key,
          'x-gateway-config': config,
          'anthropic-version': '2023-06-01',
          ...headers,
        },
        body: JSON.stringify({ model: 'claude-sonnet-4-6', max_tokens: 64, system: 'Be brief.', messages: [{ role: 'user', content }] }),
      });
      return { status: response.status, cache: response.headers.get('x-gateway-cache-status'), text: await response.text() };
    }

    test('the same saved config and body: another workspace misses and calls the provider; the same workspace hits', async () => {
      const first = await chat(TEAM_A, 'shared', 'plain question');
      assert.equal(first.status, 200);
      assert.equal(first.cache, 'MISS');
      oa.setReplyText('an answer for team B');
      const other = await chat(TEAM_B, 'shared', 'plain question');
      assert.equal(other.cache, 'MISS');
      assert.doesNotMatch(other.text, /confidential/);
      assert.equal(oa.requests.length, 2, 'team B reached the provider');
      const sameWorkspace = await chat(TEAM_A_OTHER, 'shared', 'plain question');
      assert.equal(sameWorkspace.cache, 'HIT', 'another key of the same workspace still shares the entry');
      assert.equal(sameWorkspace.text, first.text);
    });

    test('the same x-gateway-cache-namespace does not join workspaces', async () => {
      const namespace = { 'x-gateway-cache-namespace': 'shared-ns' };
      assert.equal((await chat(TEAM_A, 'shared', 'namespaced question', namespace)).cache, 'MISS');
      oa.setReplyText('an answer for team B');
      const other = await chat(TEAM_B, 'shared', 'namespaced question', namespace);
      assert.equal(other.cache, 'MISS');
      assert.doesNotMatch(other.text, /confidential/);
      assert.equal((await chat(TEAM_A_OTHER, 'shared', 'namespaced question', { ...namespace, 'x-gateway-metadata': '{"team":"z"}' })).cache, 'HIT');
    });

    test('a namespace does not drop the target: the same body routed to another provider misses', async () => {
      const namespace = { 'x-gateway-cache-namespace': 'one-ns' };
      assert.equal((await chat(TEAM_A, 'shared', 'which target?', namespace)).cache, 'MISS');
      oaOther.setReplyText('the other target answers');
      const otherTarget = await chat(TEAM_A, 'shared-other-target', 'which target?', namespace);
      assert.equal(otherTarget.cache, 'MISS');
      assert.match(otherTarget.text, /the other target answers/);
      assert.equal(oaOther.requests.length, 1);
    });

    test('semantic on /v1/chat/completions: a paraphrase from another workspace misses, with or without a namespace', async () => {
      for (const headers of [{}, { 'x-gateway-cache-namespace': 'semantic-ns' }] as Array<Record<string, string>>) {
        oa.reset();
        oa.setReplyText(SECRET);
        const original = await chat(TEAM_A, 'shared-semantic', `what is the capital city of France ${Object.keys(headers).length}`, headers);
        assert.equal(original.cache, 'MISS');
        oa.setReplyText('an answer for team B');
        const paraphrase = await chat(TEAM_B, 'shared-semantic', `what is the capital city of france ${Object.keys(headers).length}?`, headers);
        assert.equal(paraphrase.cache, 'MISS');
        assert.doesNotMatch(paraphrase.text, /confidential/);
        assert.equal(oa.requests.length, 2);
        const sameWorkspace = await chat(TEAM_A_OTHER, 'shared-semantic', `what is the capital city of france ${Object.keys(headers).length}?`, headers);
        assert.equal(sameWorkspace.cache, 'SEMANTIC_HIT', 'the same workspace still gets semantic hits');
      }
    });

    test('/v1/messages: neither an exact repeat nor a paraphrase crosses workspaces under a shared namespace', async () => {
      const namespace = { 'x-gateway-cache-namespace': 'messages-ns' };
      anthropic.enqueue({ text: SECRET });
      assert.equal((await messages(TEAM_A, 'claude-cached', 'exact repeat', namespace)).cache, 'MISS');
      const repeat = await messages(TEAM_B, 'claude-cached', 'exact repeat', namespace);
      assert.equal(repeat.cache, 'MISS');
      assert.doesNotMatch(repeat.text, /confidential/);

      anthropic.enqueue({ text: SECRET });
      assert.equal((await messages(TEAM_A, 'claude-semantic', 'what is the capital city of France', namespace)).cache, 'MISS');
      const paraphrase = await messages(TEAM_B, 'claude-semantic', 'what is the capital city of france?', namespace);
      assert.equal(paraphrase.status, 200);
      assert.equal(paraphrase.cache, 'MISS');
      assert.doesNotMatch(paraphrase.text, /confidential/);
      assert.equal(anthropic.requests.length, 4, 'every team B request reached the provider');
      const sameWorkspace = await messages(TEAM_A_OTHER, 'claude-semantic', 'what is the capital city of france?', namespace);
      assert.equal(sameWorkspace.cache, 'SEMANTIC_HIT');
      assert.match(sameWorkspace.text, /confidential/, 'within team A the stored answer serves');
    });
  });
}

tenancySuite('memory', () => ({}));

tenancySuite('redis', () => ({ cacheStore: new RedisResponseCache({ url: REDIS_URL, keyPrefix: `${PREFIX}tenancy:`, commandTimeoutMs: 2_000 }) }), redisSkip);

describe('the Redis store and semantic index keep workspaces and targets apart', { skip: redisSkip }, () => {
  const keyPrefix = `${PREFIX}tenancy-semantic:`;
  const store = new RedisResponseCache({ url: REDIS_URL, keyPrefix, commandTimeoutMs: 2_000 });
  const index = new RedisSemanticIndex({ url: REDIS_URL, keyPrefix, commandTimeoutMs: 2_000 });
  const cache = new ResponseCache({ store, index, embedder: new LexicalEmbedder(), threshold: 0.8 });
  after(() => Promise.all([store.close(), index.close()]));
  const ask = (workspace: string, question: string, extra: Partial<CacheRequest> = {}): CacheRequest => ({
    mode: 'semantic',
    workspace,
    endpoint: 'chat.completions',
    identity: 'config:shared-semantic:x',
    body: { model: 'gpt-4o-mini', messages: [{ role: 'user', content: question }] },
    namespace: 'shared-ns',
    ...extra,
  });

  test('an answer stored for one workspace is neither a HIT nor a SEMANTIC_HIT for another, nor for another target', async () => {
    const original = ask('team-a', 'what is the capital city of France');
    await cache.save(original, await cache.lookup(original), JSON.stringify({ secret: SECRET }));
    assert.equal((await cache.lookup(ask('team-a', 'what is the capital city of France'))).status, 'HIT');
    assert.equal((await cache.lookup(ask('team-a', 'what is the capital city of france?'))).status, 'SEMANTIC_HIT');
    assert.equal((await cache.lookup(ask('team-b', 'what is the capital city of France'))).status, 'MISS');
    assert.equal((await cache.lookup(ask('team-b', 'what is the capital city of france?'))).status, 'MISS');
    assert.equal((await cache.lookup(ask('team-a', 'what is the capital city of france?', { identity: 'config:other:y' }))).status, 'MISS');
  });
});
