import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import type { SavedProvider } from '../config/gateway-state.ts';
import type { RoutingConfig } from '../config/routing-config-schema.ts';
import type { OpenAIErrorBody } from '../errors.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import type { SseFrameSource } from './sse-parser.ts';

// One interface for every provider family (DESIGN.md §3). The OpenAI family is the
// identity: it forwards the client's bytes untouched. Other families translate bodies,
// responses and stream events; an adapter that leaves a hook out opts into passthrough.

/** A leaf of the routing tree, resolved to everything needed to call one upstream. */
export interface ResolvedTarget {
  /** Where in the config this leaf sits: `config`, `config.targets[1]`, … */
  readonly path: string;
  /** Provider name as the user knows it (`openai`, `groq`, `anthropic`…); used in headers and metrics. */
  readonly provider: string;
  readonly adapter: ProviderAdapter;
  /** Base URL including any version segment, without a trailing slash. */
  readonly baseUrl: string;
  /** True when the base URL came from a custom host (config, header or saved provider). */
  readonly customHost: boolean;
  /**
   * Who chose the host: `operator` when it comes from what the operator wrote alone (a saved
   * provider or config), `request` when the request picked it (a custom host, an inline
   * config, a resource or region header). Selects the egress policy the call passes.
   */
  readonly hostChosenBy: 'operator' | 'request';
  readonly apiKey: string | undefined;
  /** Provider-specific headers (organisation, project, …). */
  readonly headers: Readonly<Record<string, string>>;
  /** Family-specific settings gathered by the family's resolveOptions (regions, deployments, credentials…). */
  readonly options: Readonly<Record<string, unknown>>;
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

export interface PlanInput {
  readonly target: ResolvedTarget;
  readonly endpoint: InferenceEndpoint;
  /** The parsed request body (after override_params). */
  readonly body: Record<string, unknown>;
  /** True when the body differs from the client's bytes (the plan must then send a body). */
  readonly bodyChanged: boolean;
  /** The gateway's upstream agent, for side calls (cloud tokens) that must pass the egress policy. */
  readonly dispatcher?: Dispatcher | undefined;
}

/**
 * A call forwarded to the provider's own API as it is (files, batches, fine-tuning jobs,
 * models and the other OpenAI routes the gateway does not translate).
 */
export interface ForwardedCall {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Under the provider's API root, segments already encoded: `/batches`, `/files/file-1/content`. */
  readonly path: string;
  readonly query?: URLSearchParams | undefined;
  /** Bytes, or a stream relayed as it arrives (uploads are never held whole). */
  readonly body?: Buffer | Readable | undefined;
  /** The client's headers the route passes on (content-type, content-length…). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** A forwarded call in the provider's own form: where it goes and with which credentials. */
export interface ForwardedRequest {
  readonly url: URL;
  readonly method: ForwardedCall['method'];
  readonly headers: Record<string, string>;
  readonly body: Buffer | Readable | null;
}

/** Builds a forwarded call for one resolved target. */
export type ForwardOperation = (target: ResolvedTarget, call: ForwardedCall) => ForwardedRequest;

export interface ProviderAdapter {
  /** Adapter family (`openai`, `anthropic`, …). */
  readonly family: string;
  supportsEndpoint(endpoint: InferenceEndpoint): boolean;
  /** Builds the upstream call; async for families that fetch cloud tokens (cached, never per request). */
  planRequest(input: PlanInput): UpstreamRequestPlan | Promise<UpstreamRequestPlan>;
  /** Response body transform (parsed JSON in, OpenAI-shaped JSON out); absent = bytes relayed unchanged. */
  transformResponse?(endpoint: InferenceEndpoint, body: unknown, request: Record<string, unknown>): unknown;
  /**
   * Incremental stream translation: upstream bytes in (SSE or binary event-stream), OpenAI
   * SSE frames out, ending with `data: [DONE]` where OpenAI's stream does. It is the source of
   * the relay's one frame pipeline, so the frames it builds are never split or parsed again.
   * Absent = the upstream's SSE relayed as it is.
   */
  createStreamTranslator?(endpoint: InferenceEndpoint, request: Record<string, unknown>): SseFrameSource;
  /**
   * Forwarded routes (files, batches, fine-tuning, models…) in the provider's own form;
   * `undefined` declares that the family's API serves none of them, and forwarded requests
   * naming it are refused with a 400 before anything is read.
   */
  readonly forward: ForwardOperation | undefined;
  /** Which forwarded routes (`/v1/models`, `/v1/batches/{batch_id}`) `forward` serves; absent: all. */
  forwardsRoute?(route: string): boolean;
  /** The provider's error answer in the OpenAI error shape. */
  normaliseError(status: number, bodyText: string, provider: string): OpenAIErrorBody;
  /**
   * Families that take the Anthropic Messages body as is (Anthropic; Claude on Bedrock and
   * Vertex AI): planRequest then serves `messages` and `messages.count_tokens` natively.
   * Absent, or `accepts` false for a model: the messages ingress translates to chat.
   */
  readonly nativeMessages?: NativeMessages;
}

export interface NativeMessages {
  /** True when this request (its model) goes to the provider in the Messages format. */
  accepts(body: Record<string, unknown>): boolean;
  /** The answer in Anthropic's shape; absent = the provider's bytes relayed unchanged. */
  transformResponse?(endpoint: InferenceEndpoint, body: unknown): unknown;
  /** Upstream stream → Anthropic's SSE frames; absent = relayed unchanged. */
  createStreamTranslator?(endpoint: InferenceEndpoint): SseFrameSource;
}

/** Input to a family's option resolution. */
export interface ResolveOptionsInput {
  readonly node: RoutingConfig;
  readonly saved: SavedProvider | undefined;
  readonly headers: IncomingHttpHeaders;
}

/** A provider family as data: which names it serves and how to reach them. */
export interface ProviderFamily {
  /** Provider names this entry serves (`anthropic`; `azure-openai`; …). */
  readonly name: string;
  /** Public base URL; undefined when it depends on options or is always self-hosted. */
  readonly baseUrl: string | undefined;
  readonly adapter: ProviderAdapter;
  /** Whether a bearer/API key is required (cloud families may authenticate otherwise). Default true. */
  readonly requiresApiKey?: boolean;
  /**
   * Gathers family-specific settings from the config leaf, the saved provider's options and
   * the request's x-gateway-cloud* headers; throws a GatewayError (400) naming what is missing.
   * May also compute the base URL (e.g. from a resource name or region).
   */
  resolveOptions?(input: ResolveOptionsInput): { options: Record<string, unknown>; baseUrl?: string };
}
