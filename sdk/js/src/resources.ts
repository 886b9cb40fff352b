// Typed helpers for the gateway's own endpoints (docs/prompts.md, docs/rate-limits.md).
// They go through the openai client's request machinery, so they share its headers,
// retries, timeouts and error classes (a 404 is an openai NotFoundError, and so on).
import type { APIPromise, OpenAI } from 'openai';

type RequestOptions = OpenAI.RequestOptions;

// ---- Prompts -------------------------------------------------------------------------

/** A prompt's hyperparameters: its defaults, and the overrides a render request may give at the root. */
export interface PromptHyperparameters {
  model?: string;
  frequency_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
  max_tokens?: number | null;
  n?: number | null;
  presence_penalty?: number | null;
  response_format?: { type: string; [key: string]: unknown } | null;
  seed?: number | null;
  stop?: string | string[] | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  thinking?: { type: string; budget_tokens?: number } | null;
  temperature?: number | null;
  top_p?: number | null;
  tools?: Array<{
    type: 'function';
    function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
  }> | null;
  tool_choice?: string | { type: string; function?: { name: string } } | null;
  parallel_tool_calls?: boolean | null;
  user?: string | null;
  function_call?: string | { name: string } | null;
  functions?: Array<{ name: string; description?: string; parameters?: Record<string, unknown> }> | null;
}

/** `POST /v1/prompts/{promptId}/render`: `variables`, and any hyperparameter at the root (never nested). */
export interface PromptRenderParams extends PromptHyperparameters {
  variables: Record<string, unknown>;
}

export interface RenderedMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';
  content: string;
  name?: string;
}

/** A chat completion request body, ready for `chat.completions.create`. */
export interface RenderedPrompt extends PromptHyperparameters {
  messages: RenderedMessage[];
}

export interface PromptRenderResponse {
  success: boolean;
  data: RenderedPrompt;
}

export class Prompts {
  readonly #client: OpenAI;

  constructor(client: OpenAI) {
    this.#client = client;
  }

  /**
   * Renders a stored prompt with variables.
   *
   * @example
   * const { data } = await gateway.prompts.render('support-reply', { variables: { tone: 'friendly' }, temperature: 0.7 });
   */
  render(promptId: string, params: PromptRenderParams, options?: RequestOptions): APIPromise<PromptRenderResponse> {
    return this.#client.post(`/prompts/${encodeURIComponent(promptId)}/render`, { ...options, body: params });
  }
}

// ---- Rate-limit policies -------------------------------------------------------------

export type RateLimitType = 'requests' | 'tokens';
export type RateLimitUnit = 'rpm' | 'rph' | 'rpd';
export type RateLimitStatus = 'active' | 'archived';

export interface RateLimitPolicy {
  id: string;
  type: RateLimitType;
  unit: RateLimitUnit;
  value: number;
  status: RateLimitStatus;
  workspace_id?: string;
  organisation_id?: string;
  name?: string;
  conditions: Array<{ key: string; value: string }>;
  group_by: Array<{ key: string }>;
  created_at?: string;
  last_updated_at?: string;
}

export interface RateLimitPolicyCreateParams {
  /** At least one; keys: `workspace_id`, `api_key`, `metadata.<key>`, `provider`, `model`, `config`. */
  conditions: ReadonlyArray<{ readonly key: string; readonly value: string }>;
  /** At least one. */
  group_by: ReadonlyArray<{ readonly key: string }>;
  type: RateLimitType;
  unit: RateLimitUnit;
  value: number;
  name?: string;
  workspace_id?: string;
  organisation_id?: string;
}

export interface RateLimitPolicyCreated {
  id: string;
  object: string;
}

export interface RateLimitPolicyListParams {
  workspace_id?: string;
  status?: RateLimitStatus;
  type?: RateLimitType;
  unit?: RateLimitUnit;
  page_size?: number;
  current_page?: number;
}

export interface RateLimitPolicyList {
  object: 'list';
  data: RateLimitPolicy[];
  total: number;
}

/** Our addition to the spec (`PATCH /v1/policies/rate-limits/{id}`). */
export interface RateLimitPolicyUpdateParams {
  status?: RateLimitStatus;
  value?: number;
  name?: string;
}

export class RateLimitPolicies {
  readonly #client: OpenAI;

  constructor(client: OpenAI) {
    this.#client = client;
  }

  /** Creates a policy (needs a key with the `admin` scope). */
  create(params: RateLimitPolicyCreateParams, options?: RequestOptions): APIPromise<RateLimitPolicyCreated> {
    return this.#client.post('/policies/rate-limits', { ...options, body: params });
  }

  /** Lists policies; `status` defaults to `active` on the gateway. */
  list(params: RateLimitPolicyListParams = {}, options?: RequestOptions): APIPromise<RateLimitPolicyList> {
    return this.#client.get('/policies/rate-limits', { ...options, query: params });
  }

  retrieve(id: string, options?: RequestOptions): APIPromise<RateLimitPolicy> {
    return this.#client.get(`/policies/rate-limits/${encodeURIComponent(id)}`, options);
  }

  update(id: string, params: RateLimitPolicyUpdateParams, options?: RequestOptions): APIPromise<RateLimitPolicy> {
    return this.#client.patch(`/policies/rate-limits/${encodeURIComponent(id)}`, { ...options, body: params });
  }

  /** Archives a policy: it stays listed (with `status: 'archived'`) but is no longer enforced. */
  archive(id: string, options?: RequestOptions): APIPromise<RateLimitPolicy> {
    return this.update(id, { status: 'archived' }, options);
  }
}

export class Policies {
  readonly rateLimits: RateLimitPolicies;

  constructor(client: OpenAI) {
    this.rateLimits = new RateLimitPolicies(client);
  }
}

// ---- Request logs --------------------------------------------------------------------

/**
 * Filters of `GET /v1/logs`. Available once the gateway's request-log store lands
 * (until then the gateway answers 404, raised as the openai SDK's NotFoundError).
 */
export interface LogListParams {
  trace_id?: string;
  /** Each entry becomes a `metadata.<key>=<value>` filter. */
  metadata?: Record<string, string>;
  status?: number;
  provider?: string;
  model?: string;
  /** ISO 8601 time range. */
  from?: string;
  to?: string;
  limit?: number;
  /** Cursor from the previous page. */
  after?: string;
}

/** One request, as the gateway logs it (docs/configuration.md, "Operational endpoints"). */
export interface LogEntry {
  id?: string;
  trace_id: string;
  method?: string;
  route?: string;
  status: number;
  latency_ms?: number;
  api_key_id?: string;
  workspace?: string;
  config_id?: string;
  provider?: string;
  model?: string;
  target?: string;
  retries?: number;
  metadata?: Record<string, unknown>;
  error_code?: string;
  [field: string]: unknown;
}

export interface LogList {
  object: 'list';
  data: LogEntry[];
  has_more?: boolean;
  [field: string]: unknown;
}

export class Logs {
  readonly #client: OpenAI;

  constructor(client: OpenAI) {
    this.#client = client;
  }

  /** Searches the request log (admin scope) by trace id, metadata and more. */
  list(params: LogListParams = {}, options?: RequestOptions): APIPromise<LogList> {
    const { metadata, ...rest } = params;
    const query: Record<string, string | number> = {};
    for (const [key, value] of Object.entries(rest)) if (value !== undefined) query[key] = value;
    for (const [key, value] of Object.entries(metadata ?? {})) query[`metadata.${key}`] = value;
    return this.#client.get('/logs', { ...options, query });
  }
}
