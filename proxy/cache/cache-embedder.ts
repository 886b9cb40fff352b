import type { Dispatcher } from 'undici';
import { discard } from '../upstream/guarded-call.ts';
import { attemptTarget, completePlainAnswer } from '../upstream/call-target.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { resolveTarget } from '../routing/resolve-target.ts';
import { EmbeddingsEndpointEmbedder, LexicalEmbedder, type Embedder } from './semantic-cache.ts';

// The embedder semantic caching uses: the state file's `cache.embeddings` provider when
// one is set (any provider that serves embeddings), else the built-in lexical vectorizer.
// Resolved from the live state at each call. The call is an inference attempt like any
// other: the provider's adapter builds it in the provider's own form (Azure deployments,
// Vertex :predict, Bedrock InvokeModel…) and translates the answer back to OpenAI's list.

const LEXICAL = new LexicalEmbedder();
const EMBEDDING_TIMEOUT_MS = 10_000;

export function stateEmbedder(state: () => GatewayState, dispatcher: Dispatcher): Embedder {
  let cached: { state: GatewayState; embedder: Embedder } | undefined;
  const current = (): Embedder => {
    const live = state();
    if (cached?.state === live) return cached.embedder;
    const settings = live.document.cache.embeddings;
    let embedder: Embedder = LEXICAL;
    if (settings !== undefined) {
      // One node per snapshot, so the resolved target is cached with it.
      const node = { provider: settings.provider };
      embedder = new EmbeddingsEndpointEmbedder(`${settings.provider}/${settings.model}`, (text) =>
        embedThrough(dispatcher, resolveTarget(node, 'cache.embeddings', live), { model: settings.model, input: text, encoding_format: 'float' }),
      );
    }
    cached = { state: live, embedder };
    return embedder;
  };
  return {
    get id() {
      return current().id;
    },
    embed: (text) => current().embed(text),
  };
}

/** One embeddings call through the target's adapter; the answer in OpenAI's shape. */
async function embedThrough(dispatcher: Dispatcher, target: ResolvedTarget, body: Record<string, unknown>): Promise<unknown> {
  if (!target.adapter.supportsEndpoint('embeddings')) throw new Error(`cache.embeddings: provider "${target.provider}" serves no embeddings`);
  const result = await attemptTarget({
    dispatcher,
    target,
    endpoint: 'embeddings',
    body,
    rawBody: Buffer.from(JSON.stringify(body)),
    requestHeaders: {},
    forwardHeaders: [],
    timeoutMs: EMBEDDING_TIMEOUT_MS,
    // Bounded by the timeouts; nothing cancels a cache lookup midway.
    signal: new AbortController().signal,
  });
  if (result.kind === 'error') throw result.error;
  if (result.plain === undefined) {
    discard(result.response.body);
    throw new Error(`embeddings provider answered ${result.response.statusCode}`);
  }
  // Held only while it is read: the vector is all that is kept.
  const { plain, release } = await completePlainAnswer(result.response, result.plain, target.provider);
  release();
  const transform = target.adapter.transformResponse;
  return transform === undefined ? plain.parsed : transform('embeddings', plain.parsed, result.requestBody);
}
