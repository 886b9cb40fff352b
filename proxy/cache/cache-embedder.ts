import { request } from 'undici';
import type { Dispatcher } from 'undici';
import type { GatewayState } from '../config/gateway-state.ts';
import { resolveTarget } from '../routing/resolve-target.ts';
import { EmbeddingsEndpointEmbedder, LexicalEmbedder, type Embedder } from './semantic-cache.ts';

// The embedder semantic caching uses: the state file's `cache.embeddings` provider when
// one is set (any saved provider with an OpenAI-compatible embeddings endpoint), else the
// built-in lexical vectorizer. Resolved from the live state at each call.

const LEXICAL = new LexicalEmbedder();

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
            const response = await request(`${target.baseUrl}/embeddings`, {
              method: 'POST',
              dispatcher,
              headers: { 'content-type': 'application/json', ...(target.apiKey === undefined ? {} : { authorization: `Bearer ${target.apiKey}` }) },
              body: JSON.stringify({ model: settings.model, input: text, encoding_format: 'float' }),
              headersTimeout: 10_000,
              bodyTimeout: 10_000,
            });
            if (response.statusCode !== 200) {
              await response.body.dump();
              throw new Error(`embeddings provider answered ${response.statusCode}`);
            }
            return response.body.json();
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
