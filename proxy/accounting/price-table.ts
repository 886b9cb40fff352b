import { createRequire } from 'node:module';
import type { ModelInfo, ModelPrice, Provider, Usage } from '@pydantic/genai-prices';

// What one request cost in USD, from the maintained price table of @pydantic/genai-prices
// (prices per million tokens, cached-input and cache-write rates, long-context tiers,
// dated price changes), with the state file's `modelPrices` in front for private models.
// A model neither knows is unpriced (undefined), never free.
//
// The table (≈ 20 MiB loaded) is required on the first lookup it must answer, not at start-up:
// a one-time ≈ 15 ms, after the first priced answer went out; a gateway that prices
// everything from modelPrices, or serves nothing priced, never loads it.
const require = createRequire(import.meta.url);
let calcPriceFn: typeof import('@pydantic/genai-prices').calcPrice | undefined;

function calcPrice(...args: Parameters<typeof import('@pydantic/genai-prices').calcPrice>): ReturnType<typeof import('@pydantic/genai-prices').calcPrice> {
  calcPriceFn ??= (require('@pydantic/genai-prices') as typeof import('@pydantic/genai-prices')).calcPrice;
  return calcPriceFn(...args);
}

/** Token counts as the provider reported them (OpenAI convention: cached ⊂ prompt, reasoning ⊂ completion). */
export interface TokenUsage {
  readonly prompt: number | undefined;
  readonly completion: number | undefined;
  /** Prompt tokens read from the provider's prompt cache (billed at the cached rate). */
  readonly cachedPrompt?: number | undefined;
  /** Prompt tokens written to the provider's prompt cache (Anthropic), when reported. */
  readonly cacheWrite?: number | undefined;
  /** Completion tokens spent on reasoning (billed as output). */
  readonly reasoning?: number | undefined;
  /** Prompt tokens that are audio (⊂ prompt, cached audio included; realtime, audio chat). */
  readonly audioPrompt?: number | undefined;
  /** Audio prompt tokens read from the provider's cache (⊂ audioPrompt and ⊂ cachedPrompt). */
  readonly cachedAudioPrompt?: number | undefined;
  /** Completion tokens that are audio (⊂ completion). */
  readonly audioCompletion?: number | undefined;
}

/** A state-file price for a model the table does not know (USD per million tokens). */
export interface ModelPriceOverride {
  readonly model: string;
  /** Only for this provider; any provider when absent. */
  readonly provider?: string | undefined;
  readonly inputPerMillion: number;
  readonly outputPerMillion: number;
  readonly cachedInputPerMillion?: number | undefined;
  readonly cacheWritePerMillion?: number | undefined;
  /** Audio prompt tokens (default: the input price). */
  readonly audioInputPerMillion?: number | undefined;
  /** Audio prompt tokens read from a cache (default: the cached input price). */
  readonly cachedAudioInputPerMillion?: number | undefined;
  /** Audio completion tokens (default: the output price). */
  readonly audioOutputPerMillion?: number | undefined;
}

// The gateway's provider names → the table's provider ids. Self-hosted providers (ollama,
// vllm, lm-studio) and made-up names have no public price: only an override prices them.
const TABLE_PROVIDER: Readonly<Record<string, string>> = {
  openai: 'openai',
  'azure-openai': 'azure',
  anthropic: 'anthropic',
  bedrock: 'aws',
  'vertex-ai': 'google',
  google: 'google',
  groq: 'groq',
  'together-ai': 'together',
  'mistral-ai': 'mistral',
  deepseek: 'deepseek',
  'fireworks-ai': 'fireworks',
  openrouter: 'openrouter',
  'perplexity-ai': 'perplexity',
  'x-ai': 'x-ai',
  cohere: 'cohere',
  cerebras: 'cerebras',
};

type Resolved =
  | { readonly kind: 'flat'; readonly price: FlatPrice }
  // Tiers or dated prices: the table's own calculation, over a one-model provider.
  | { readonly kind: 'table'; readonly provider: Provider; readonly modelId: string }
  | { readonly kind: 'unknown' };

interface FlatPrice {
  readonly input: number;
  readonly output: number;
  readonly cacheRead: number;
  readonly cacheWrite: number;
  // A model without an audio price bills audio tokens at its text rates (docs/websocket.md).
  readonly audioInput: number;
  readonly audioCacheRead: number;
  readonly audioOutput: number;
}

const MAX_RESOLVED = 4096;
const FLAT_KEYS = new Set(['input_mtok', 'output_mtok', 'cache_read_mtok', 'cache_write_mtok', 'input_audio_mtok', 'cache_audio_read_mtok', 'output_audio_mtok']);

export class PriceTable {
  readonly #overrides: ReadonlyMap<string, FlatPrice>;
  // provider → model → price: two lookups, no key string built per request.
  readonly #resolved = new Map<string, Map<string, Resolved>>();
  #size = 0;

  constructor(overrides: readonly ModelPriceOverride[] = []) {
    const map = new Map<string, FlatPrice>();
    for (const entry of overrides) {
      const cacheRead = entry.cachedInputPerMillion ?? entry.inputPerMillion;
      map.set(overrideKey(entry.provider, entry.model), {
        input: entry.inputPerMillion,
        output: entry.outputPerMillion,
        cacheRead,
        cacheWrite: entry.cacheWritePerMillion ?? entry.inputPerMillion,
        audioInput: entry.audioInputPerMillion ?? entry.inputPerMillion,
        audioCacheRead: entry.cachedAudioInputPerMillion ?? cacheRead,
        audioOutput: entry.audioOutputPerMillion ?? entry.outputPerMillion,
      });
    }
    this.#overrides = map;
  }

  /** USD for `usage` of `model` at `provider`, or undefined when the model has no known price. */
  costUsd(provider: string | undefined, model: string | undefined, usage: TokenUsage, atMs: number = Date.now()): number | undefined {
    if (model === undefined || (usage.prompt === undefined && usage.completion === undefined)) return undefined;
    const resolved = this.#resolve(provider, model);
    if (resolved.kind === 'unknown') return undefined;
    if (resolved.kind === 'flat') return flatCost(resolved.price, usage);
    try {
      return calcPrice(tableUsage(usage), resolved.modelId, { provider: resolved.provider, timestamp: new Date(atMs) })?.total_price;
    } catch {
      // Inconsistent counts from a provider (cached > prompt…) price as unknown, never crash.
      return undefined;
    }
  }

  /** True when the model has a price (the table's or an override). */
  knows(provider: string | undefined, model: string): boolean {
    return this.#resolve(provider, model).kind !== 'unknown';
  }

  #resolve(provider: string | undefined, model: string): Resolved {
    const byProvider = this.#resolved.get(provider ?? '');
    let resolved = byProvider?.get(model);
    if (resolved === undefined) {
      resolved = this.#lookup(provider, model);
      // Model names come from requests: the memo is bounded, lookups past it are recomputed.
      if (this.#size < MAX_RESOLVED) {
        this.#size++;
        if (byProvider === undefined) this.#resolved.set(provider ?? '', new Map([[model, resolved]]));
        else byProvider.set(model, resolved);
      }
    }
    return resolved;
  }

  #lookup(provider: string | undefined, model: string): Resolved {
    const override = this.#overrides.get(overrideKey(provider, model)) ?? this.#overrides.get(overrideKey(undefined, model));
    if (override !== undefined) return { kind: 'flat', price: override };
    const providerId = provider === undefined ? undefined : TABLE_PROVIDER[provider];
    if (providerId === undefined || model.length > 256) return { kind: 'unknown' };
    let found;
    try {
      found = calcPrice({ input_tokens: 1, output_tokens: 1 }, model, { providerId });
    } catch {
      return { kind: 'unknown' };
    }
    if (found === null) return { kind: 'unknown' };
    const flat = flatPriceOf(found.model);
    if (flat !== undefined) return { kind: 'flat', price: flat };
    const single: ModelInfo = { ...found.model, match: { equals: found.model.id } };
    return { kind: 'table', modelId: found.model.id, provider: { ...found.provider, models: [single] } };
  }
}

function overrideKey(provider: string | undefined, model: string): string {
  return `${provider ?? '*'}\u0000${model}`;
}

/** A model whose price is one set of per-token numbers (most): priced without the table's matcher. */
function flatPriceOf(model: ModelInfo): FlatPrice | undefined {
  if (Array.isArray(model.prices)) return undefined;
  const prices: ModelPrice = model.prices;
  for (const [key, value] of Object.entries(prices)) {
    if (value === undefined) continue;
    if (typeof value !== 'number') return undefined;
    // Prices for units we do not count (images, searches) do not apply to our usage;
    // a per-request price would: leave those to the table.
    if (!FLAT_KEYS.has(key) && key.startsWith('requests')) return undefined;
  }
  const input = prices['input_mtok'];
  const output = prices['output_mtok'];
  if (typeof input !== 'number' && typeof output !== 'number') return undefined;
  const inputPrice = typeof input === 'number' ? input : 0;
  const outputPrice = typeof output === 'number' ? output : 0;
  const cacheRead = numberOr(prices['cache_read_mtok'], inputPrice);
  return {
    input: inputPrice,
    output: outputPrice,
    cacheRead,
    cacheWrite: numberOr(prices['cache_write_mtok'], inputPrice),
    audioInput: numberOr(prices['input_audio_mtok'], inputPrice),
    audioCacheRead: numberOr(prices['cache_audio_read_mtok'], cacheRead),
    audioOutput: numberOr(prices['output_audio_mtok'], outputPrice),
  };
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' ? value : fallback;
}

/** Usage cut into disjoint parts. */
interface UsageParts {
  textInput: number;
  textCacheRead: number;
  cacheWrite: number;
  audioInput: number;
  audioCacheRead: number;
  textOutput: number;
  audioOutput: number;
}

// The flat price's parts go into one object reused by every call (synchronous, one thread):
// this runs for every priced request, and a fresh parts object was allocated each time.
const FLAT_PARTS: UsageParts = { textInput: 0, textCacheRead: 0, cacheWrite: 0, audioInput: 0, audioCacheRead: 0, textOutput: 0, audioOutput: 0 };

function flatCost(price: FlatPrice, usage: TokenUsage): number {
  const parts = splitUsage(usage, FLAT_PARTS);
  const input =
    parts.textInput * price.input +
    parts.textCacheRead * price.cacheRead +
    parts.cacheWrite * price.cacheWrite +
    parts.audioInput * price.audioInput +
    parts.audioCacheRead * price.audioCacheRead;
  return (input + parts.textOutput * price.output + parts.audioOutput * price.audioOutput) / 1e6;
}

/** Usage cut into disjoint parts, each clipped to what its parent leaves (hostile counts never add up past the prompt); into `parts` when given, else a new object. */
function splitUsage(usage: TokenUsage, parts: UsageParts = { ...FLAT_PARTS }): UsageParts {
  const prompt = nonNegative(usage.prompt);
  const cacheRead = Math.min(nonNegative(usage.cachedPrompt), prompt);
  const cacheWrite = Math.min(nonNegative(usage.cacheWrite), prompt - cacheRead);
  const audioCacheRead = Math.min(nonNegative(usage.cachedAudioPrompt), nonNegative(usage.audioPrompt), cacheRead);
  const audioInput = Math.min(nonNegative(usage.audioPrompt) - audioCacheRead, prompt - cacheRead - cacheWrite);
  const completion = nonNegative(usage.completion);
  const audioOutput = Math.min(nonNegative(usage.audioCompletion), completion);
  parts.textInput = prompt - cacheRead - cacheWrite - audioInput;
  parts.textCacheRead = cacheRead - audioCacheRead;
  parts.cacheWrite = cacheWrite;
  parts.audioInput = audioInput;
  parts.audioCacheRead = audioCacheRead;
  parts.textOutput = completion - audioOutput;
  parts.audioOutput = audioOutput;
  return parts;
}

function tableUsage(usage: TokenUsage): Usage {
  const split = splitUsage(usage);
  const counts: Usage = {
    input_tokens: nonNegative(usage.prompt),
    output_tokens: nonNegative(usage.completion),
    cache_read_tokens: split.textCacheRead + split.audioCacheRead,
    cache_write_tokens: split.cacheWrite,
  };
  // The table's audio units (totals that include their cached part), only when there is audio.
  if (split.audioInput + split.audioCacheRead > 0) counts['input_audio_tokens'] = split.audioInput + split.audioCacheRead;
  if (split.audioCacheRead > 0) counts['cache_audio_read_tokens'] = split.audioCacheRead;
  if (split.audioOutput > 0) counts['output_audio_tokens'] = split.audioOutput;
  return counts;
}

function nonNegative(value: number | undefined): number {
  return value === undefined || !Number.isFinite(value) || value < 0 ? 0 : value;
}

const contextWindows = new Map<string, number | undefined>();

/**
 * The model's context window in tokens per the price table (budgets bound a request that
 * names no max_tokens by it), or undefined when unknown. Memoised, bounded like the prices.
 */
export function contextWindowOf(provider: string | undefined, model: string): number | undefined {
  const providerId = provider === undefined ? undefined : TABLE_PROVIDER[provider];
  if (providerId === undefined || model.length > 256) return undefined;
  const key = `${providerId}\u0000${model}`;
  if (contextWindows.has(key)) return contextWindows.get(key);
  let window: number | undefined;
  try {
    const found = calcPrice({ input_tokens: 1, output_tokens: 1 }, model, { providerId });
    const value = found?.model.context_window;
    window = typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
  } catch {
    window = undefined;
  }
  if (contextWindows.size < MAX_RESOLVED) contextWindows.set(key, window);
  return window;
}
