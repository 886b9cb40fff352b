import type { Dispatcher } from 'undici';
import { discard, guardedCall, readGuardedBody, secretsOfTarget } from '../upstream/guarded-call.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import { resolveTarget } from '../routing/resolve-target.ts';
import { EmbeddingsEndpointEmbedder, LexicalEmbedder, type Embedder } from './semantic-cache.ts';

// The embedder semantic caching uses: the state file's `cache.embeddings` provider when
// one is set (any saved provider with an OpenAI-compatible embeddings endpoint), else the
// built-in lexical vectorizer. Resolved from the live state at each call.

const LEXICAL = new LexicalEmbedder();
/** One embedding of one cache key: a few hundred KiB at most even for large models. */
const MAX_EMBEDDING_ANSWER_BYTES = 8 * 1024 * 1024;
const EMBEDDING_TIMEOUT_MS = 10_000;

export function stateEmbedder(state: () => GatewayState, dispatcher: Dispatcher): Embedder {
  let cached: { state: GatewayState; embedder: Embedder } | undefined;
  const current = (): Embedder => {
    const live = state();
    if (cached?.state === live) return cached.embedder;
    const settings = live.document.cache.embeddings;
    const embedder =
      settings === undefined
        ? LEXICAL
        : new EmbeddingsEndpointEmbedder(`${settings.provider}/${settings.model}`, async (text) => {
            const target = resolveTarget({ provider: settings.provider }, 'cache.embeddings', live);
            const response = await guardedCall({
              dispatcher,
              url: `${target.baseUrl}/embeddings`,
              method: 'POST',
              headers: { 'content-type': 'application/json', ...(target.apiKey === undefined ? {} : { authorization: `Bearer ${target.apiKey}` }) },
              body: JSON.stringify({ model: settings.model, input: text, encoding_format: 'float' }),
              upstream: `${settings.provider} (cache.embeddings)`,
              secrets: secretsOfTarget(target),
              headersTimeoutMs: EMBEDDING_TIMEOUT_MS,
              bodyTimeoutMs: EMBEDDING_TIMEOUT_MS,
            });
            if (response.statusCode !== 200) {
              discard(response.body);
              throw new Error(`embeddings provider answered ${response.statusCode}`);
            }
            return JSON.parse((await readGuardedBody(response, MAX_EMBEDDING_ANSWER_BYTES)).toString('utf8')) as unknown;
          });
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
