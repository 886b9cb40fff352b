// What a cached answer is filed under — pure functions of the request, no I/O.
//
// Simple (exact) mode: one SHA-256 over a canonical JSON of what decides the answer.
// Canonical means object keys sorted at every depth, so two bodies that differ only in
// key order share an entry; array order is kept (it is meaningful: messages, stops…).
// Left out of the body: `stream` and `stream_options` (a cached answer is replayed as a
// stream or sent whole, whichever the request asks) and `user` (an end-user id for the
// provider's abuse monitoring; it does not change the answer, and keying on it would give
// every user a cache of their own). Everything else in the body counts.
//
// Every key covers the calling key's workspace (and organisation), the endpoint and the
// target identity (provider, host, credential — an answer from one provider never serves a
// request routed to another): workspaces are a tenancy boundary, and no header a caller
// sends can lift it. Without a namespace the key also covers the request metadata
// (x-gateway-metadata). With x-gateway-cache-namespace the namespace takes the metadata's
// place: the caller chose the partition within its workspace and target, so metadata is
// ignored (a namespace shared by a fallback's targets hits whichever answered first).
//
// Anthropic /v1/messages bodies are keyed the same way (model, system, messages, tools,
// tool_choice, thinking… all count), with the client's anthropic-version and
// anthropic-beta headers added by the caller: they can change the answer.
//
// Semantic mode: a nearest-neighbour search over embeddings needs a partition inside which
// "close enough" is safe. It is the simple key's scope with the new text taken out: the
// same workspace, endpoint, target, metadata (or namespace), every other body parameter, and the
// conversation up to its last message verbatim. Only the last message's text (the
// question just asked) is embedded, so a paraphrased question after the same system prompt
// and history can hit, while a different system prompt, tool set, temperature or model
// never does. See docs/caching.md.

import { createHash } from 'node:crypto';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';

/** Bumped when the key derivation changes, so old entries are never read with new meaning. */
const KEY_VERSION = 2;

/** Body fields that do not change the answer, left out of every key. */
const IGNORED_BODY_FIELDS: ReadonlySet<string> = new Set(['stream', 'stream_options', 'user']);

export interface CacheKeyInput {
  /** The calling key's workspace: entries never cross it, whatever the namespace. */
  readonly workspace: string;
  /** The calling key's organisation, when it has one. */
  readonly organisation?: string | undefined;
  readonly endpoint: InferenceEndpoint;
  /** Target identity (provider, host, credential), computed by the caller. */
  readonly identity: string;
  /** The request body as the provider will see it (after prompt rendering and override_params). */
  readonly body: Readonly<Record<string, unknown>>;
  /** x-gateway-metadata; ignored with a namespace. */
  readonly metadata?: Readonly<Record<string, unknown>> | undefined;
  /** x-gateway-cache-namespace; an empty string counts as none. */
  readonly namespace?: string | undefined;
}

export interface SemanticPartitionInput extends CacheKeyInput {
  /** The embedder's id (Embedder.id): vectors from different embedders are never compared. */
  readonly embedder: string;
}

/**
 * The exact-match cache key: SHA-256 hex of the canonical request.
 * @example
 * simpleCacheKey({ workspace: 'team-a', endpoint: 'chat.completions', identity: 'openai|api.openai.com|gpt-4o', body })
 */
export function simpleCacheKey(input: CacheKeyInput): string {
  return sha256Hex(canonicalJson({ v: KEY_VERSION, kind: 'simple', ...scope(input), body: withoutIgnored(input.body) }));
}

/**
 * The partition a semantic lookup searches: the simple key's scope and every body
 * parameter except the embedded text (see conversationText). SHA-256 hex.
 */
export function semanticPartition(input: SemanticPartitionInput): string {
  const body = withoutIgnored(input.body);
  const { context } = splitConversation(input.endpoint, input.body);
  delete body['messages'];
  delete body['prompt'];
  return sha256Hex(
    canonicalJson({ v: KEY_VERSION, kind: 'semantic', ...scope(input), embedder: input.embedder, params: body, context }),
  );
}

/**
 * The text a semantic lookup embeds: the last chat (or Anthropic) message's text (string content or its
 * text parts, joined by newlines) or a completions prompt given as one string. '' when
 * there is nothing to embed — prompts of several strings or of token ids, embeddings and
 * responses requests — and the caller then uses exact matching only. Embeddings are never
 * served semantically: a paraphrase's vector is not the vector asked for.
 */
export function conversationText(endpoint: InferenceEndpoint, body: Readonly<Record<string, unknown>>): string {
  return splitConversation(endpoint, body).text;
}

/**
 * JSON with object keys sorted at every depth (by UTF-16 code units, like Array#sort).
 * Follows JSON.stringify otherwise: undefined members are dropped, undefined array items
 * and non-finite numbers become null.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  writeCanonical(value, out);
  return out.join('');
}

function writeCanonical(value: unknown, out: string[]): void {
  if (value === null || value === undefined || typeof value === 'function' || typeof value === 'symbol') {
    out.push('null');
  } else if (typeof value === 'string' || typeof value === 'boolean') {
    out.push(JSON.stringify(value));
  } else if (typeof value === 'number') {
    out.push(Number.isFinite(value) ? JSON.stringify(value) : 'null');
  } else if (typeof value === 'bigint') {
    out.push(value.toString());
  } else if (Array.isArray(value)) {
    out.push('[');
    value.forEach((item: unknown, index) => {
      if (index > 0) out.push(',');
      writeCanonical(item, out);
    });
    out.push(']');
  } else {
    const record = value as Record<string, unknown>;
    out.push('{');
    let first = true;
    for (const key of Object.keys(record).sort()) {
      const member = record[key];
      if (member === undefined || typeof member === 'function' || typeof member === 'symbol') continue;
      if (!first) out.push(',');
      first = false;
      out.push(JSON.stringify(key), ':');
      writeCanonical(member, out);
    }
    out.push('}');
  }
}

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** What bounds an entry besides the body: workspace + endpoint + target, then namespace or metadata. */
function scope(input: CacheKeyInput): Record<string, unknown> {
  const tenant = { workspace: input.workspace, organisation: input.organisation ?? null, endpoint: input.endpoint, identity: input.identity };
  if (input.namespace !== undefined && input.namespace !== '') return { ...tenant, namespace: input.namespace };
  return { ...tenant, metadata: input.metadata ?? {} };
}

function withoutIgnored(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (!IGNORED_BODY_FIELDS.has(key)) kept[key] = value;
  }
  return kept;
}

interface ConversationSplit {
  /** The text to embed; '' when there is none. */
  readonly text: string;
  /** Everything else about the conversation, matched exactly. */
  readonly context: unknown;
}

function splitConversation(endpoint: InferenceEndpoint, body: Readonly<Record<string, unknown>>): ConversationSplit {
  // Anthropic messages: the same split (text blocks are `{ type: 'text', text }` there too);
  // `system` is a body parameter, matched exactly.
  if (endpoint === 'chat.completions' || endpoint === 'messages') {
    const messages = body['messages'];
    if (!Array.isArray(messages) || messages.length === 0) return { text: '', context: messages ?? null };
    const last: unknown = messages[messages.length - 1];
    const { text, skeleton } = splitMessage(last);
    return { text, context: { history: messages.slice(0, -1), last: skeleton } };
  }
  if (endpoint === 'completions') {
    const prompt = body['prompt'];
    if (typeof prompt === 'string') return { text: prompt, context: { prompt: 'text' } };
    if (Array.isArray(prompt) && prompt.length === 1 && typeof prompt[0] === 'string') {
      return { text: prompt[0], context: { prompt: ['text'] } };
    }
    return { text: '', context: { prompt: prompt ?? null } };
  }
  return { text: '', context: null };
}

/** A chat message's text, and the message with that text blanked (roles, names, images, tool calls kept). */
function splitMessage(message: unknown): { text: string; skeleton: unknown } {
  if (!isRecord(message)) return { text: '', skeleton: message ?? null };
  const content = message['content'];
  if (typeof content === 'string') return { text: content, skeleton: { ...message, content: '' } };
  if (!Array.isArray(content)) return { text: '', skeleton: message };
  const texts: string[] = [];
  const parts = content.map((part: unknown) => {
    if (isRecord(part) && part['type'] === 'text' && typeof part['text'] === 'string') {
      texts.push(part['text']);
      return { ...part, text: '' };
    }
    return part;
  });
  return { text: texts.join('\n'), skeleton: { ...message, content: parts } };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
