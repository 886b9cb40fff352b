// Anthropic Messages API wire shapes (POST /v1/messages, API version 2023-06-01): the
// subset the gateway writes and reads. Field names follow Anthropic's API reference.

export const ANTHROPIC_VERSION = '2023-06-01';

/** Anthropic requires max_tokens; OpenAI clients often leave it out. */
export const DEFAULT_MAX_TOKENS = 4096;

export interface AnthropicTextBlock {
  type: 'text';
  text: string;
}

export type AnthropicSource =
  | { type: 'base64'; media_type: string; data: string }
  | { type: 'url'; url: string };

export interface AnthropicImageBlock {
  type: 'image';
  source: AnthropicSource;
}

export interface AnthropicDocumentBlock {
  type: 'document';
  source: AnthropicSource;
}

export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: Record<string, unknown>;
}

export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string | Array<AnthropicTextBlock | AnthropicImageBlock>;
}

export type AnthropicContentBlock =
  | AnthropicTextBlock
  | AnthropicImageBlock
  | AnthropicDocumentBlock
  | AnthropicToolUseBlock
  | AnthropicToolResultBlock;

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | AnthropicContentBlock[];
}

export interface AnthropicTool {
  name: string;
  description?: string;
  input_schema: Record<string, unknown>;
}

export type AnthropicToolChoice =
  | { type: 'auto' | 'any'; disable_parallel_tool_use?: boolean }
  | { type: 'none' }
  | { type: 'tool'; name: string; disable_parallel_tool_use?: boolean };

export interface AnthropicMessagesRequest {
  model: string;
  messages: AnthropicMessage[];
  max_tokens: number;
  system?: string | AnthropicTextBlock[];
  stop_sequences?: string[];
  temperature?: number;
  top_p?: number;
  stream?: boolean;
  tools?: AnthropicTool[];
  tool_choice?: AnthropicToolChoice;
  metadata?: { user_id: string };
  thinking?: Record<string, unknown>;
}

/** Anthropic error types → the OpenAI error `type` clients expect. */
export const ANTHROPIC_ERROR_TYPES: Readonly<Record<string, string>> = {
  invalid_request_error: 'invalid_request_error',
  authentication_error: 'authentication_error',
  permission_error: 'permission_error',
  not_found_error: 'not_found_error',
  request_too_large: 'invalid_request_error',
  rate_limit_error: 'rate_limit_error',
  api_error: 'api_error',
  overloaded_error: 'api_error',
};

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

/**
 * The client's anthropic-version and anthropic-beta on /v1/messages, carried with the body
 * under a symbol key: planRequest sees only the body, object spread (override_params,
 * guardrail rewrites) copies symbol keys, and JSON.stringify never writes them.
 */
export const CLIENT_ANTHROPIC_HEADERS = Symbol('client anthropic headers');

export interface ClientAnthropicHeaders {
  readonly version: string | undefined;
  readonly betas: readonly string[];
}

const NO_CLIENT_HEADERS: ClientAnthropicHeaders = { version: undefined, betas: [] };

export function clientAnthropicHeaders(body: Record<string, unknown>): ClientAnthropicHeaders {
  const carried = (body as Record<symbol, unknown>)[CLIENT_ANTHROPIC_HEADERS];
  return isRecord(carried) ? (carried as unknown as ClientAnthropicHeaders) : NO_CLIENT_HEADERS;
}

/** Beta names from a comma-separated header or option, trimmed, without duplicates. */
export function betaList(...sources: ReadonlyArray<string | readonly string[] | undefined>): string[] {
  const names = new Set<string>();
  for (const source of sources) {
    const parts = typeof source === 'string' ? source.split(',') : (source ?? []);
    for (const part of parts) if (part.trim() !== '') names.add(part.trim());
  }
  return [...names];
}
