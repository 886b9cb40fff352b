import type { Transform } from 'node:stream';
import type { RoutingConfig } from '../config/routing-config-schema.ts';
import type { OpenAIErrorBody } from '../errors.ts';
import type { InferenceEndpoint } from '../endpoints/body-validation.ts';

// One interface for every provider family (DESIGN.md §3). The OpenAI family is the
// identity: it forwards the client's bytes untouched. Other families translate bodies,
// responses and stream events; an adapter that leaves a hook out opts into passthrough.

/** A leaf of the routing tree, resolved to everything needed to call one upstream. */
export interface ResolvedTarget {
  /** Where in the config this leaf sits: `config`, `config.targets[1]`, … */
  readonly path: string;
  /** Provider name as the user knows it (`openai`, `groq`, …); used in headers and metrics. */
  readonly provider: string;
  readonly adapter: ProviderAdapter;
  /** Base URL including any version segment, without a trailing slash. */
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  /** Provider-specific headers (organisation, project, …). */
  readonly headers: Readonly<Record<string, string>>;
  /** The leaf config node (override_params, timeouts… are read from it). */
  readonly node: RoutingConfig;
}

export interface UpstreamRequestPlan {
  readonly url: string;
  readonly method: 'POST' | 'GET' | 'DELETE';
  readonly headers: Record<string, string>;
  /** A replacement body; undefined forwards the client's bytes untouched. */
  readonly body?: string | Buffer | undefined;
}

export interface ProviderAdapter {
  /** Adapter family (`openai`, `anthropic`, …). */
  readonly family: string;
  supportsEndpoint(endpoint: InferenceEndpoint): boolean;
  planRequest(target: ResolvedTarget, endpoint: InferenceEndpoint, body: Record<string, unknown>): UpstreamRequestPlan;
  /** Response body transform; absent means the upstream bytes are relayed unchanged. */
  transformResponse?(endpoint: InferenceEndpoint, body: unknown): unknown;
  /** Incremental stream transform (provider events → OpenAI SSE); absent means passthrough. */
  createStreamTransform?(endpoint: InferenceEndpoint): Transform;
  /** The provider's error answer in the OpenAI error shape. */
  normaliseError(status: number, bodyText: string, provider: string): OpenAIErrorBody;
}
