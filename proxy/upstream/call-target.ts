import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { GatewayError } from '../errors.ts';
import { prefixBytes, readBodyBytes, type BodyPrefix } from './read-body.ts';
import { guardedAnswer, type CollectRule } from './answer-handler.ts';
import { plainAnswerLimits, PREFIX_BYTES, reservePlainAnswerBytes } from './plain-answer-limits.ts';
import { dispatcherFor } from './upstream-agent.ts';
import { discard, upstreamFailure, secretsOfTarget, type GuardedResponse } from './guarded-call.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';

// One upstream attempt for one resolved target: override_params, the provider's plan,
// forwarded headers, per-attempt timeouts. Network failures and timeouts come back as
// GatewayErrors (never thrown), so the strategy walk can decide what happens next.

export type AttemptResult =
  | {
      readonly kind: 'response';
      readonly response: GuardedResponse;
      readonly target: ResolvedTarget;
      /** The body as sent upstream (overrides applied). */
      readonly requestBody: Record<string, unknown>;
      /** The stream idle bound in force, for the relay's timeout event. */
      readonly timeoutMs: number | undefined;
      /** A plain (non-stream) 2xx answer, already read whole and parsed (undefined for streams). */
      readonly plain: PlainAnswer | undefined;
    }
  | { readonly kind: 'error'; readonly error: GatewayError; readonly target: ResolvedTarget; readonly networkOrTimeout: boolean };

/** A target's answer (any status) with what the relay needs: the walk's outcome when a target answered. */
export type UpstreamAnswer = Extract<AttemptResult, { kind: 'response' }>;

export interface PlainAnswer {
  /** The whole answer (empty when it is `partial`). */
  readonly bytes: Buffer;
  /** The parsed JSON, or undefined when the answer is not JSON (or is `partial`). */
  readonly parsed: unknown;
  /**
   * Set for an answer larger than PREFIX_BYTES: what was read of it, the rest still in the
   * response body. The relay streams it on, or reads it whole with completePlainAnswer.
   */
  readonly partial?: BodyPrefix | undefined;
}

/** The agent's own timeouts (upstream-agent.ts) when the config sets no request_timeout. */
const AGENT_DEFAULT_TIMEOUT_MS = 600_000;


export interface AttemptInput {
  readonly dispatcher: Dispatcher;
  readonly target: ResolvedTarget;
  readonly endpoint: InferenceEndpoint;
  readonly body: Record<string, unknown>;
  readonly rawBody: Buffer | undefined;
  readonly requestHeaders: IncomingHttpHeaders;
  /** Extra request header names to pass through unprocessed (from the header and the config). */
  readonly forwardHeaders: readonly string[];
  readonly timeoutMs: number | undefined;
  readonly signal: AbortSignal;
}

// Never forwarded, whatever a config asks: connection-level headers and our own secrets.
const NOT_FORWARDABLE = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'x-gateway-api-key',
]);

// Kept for callers that imported it from here.
export { upstreamFailure };

export async function attemptTarget(input: AttemptInput): Promise<AttemptResult> {
  const { target, endpoint } = input;
  const overrides = target.node.override_params;
  const body = overrides !== undefined && Object.keys(overrides).length > 0 ? { ...input.body, ...overrides } : input.body;
  // A host the request chose goes through the client egress policy (and pools), side calls too.
  const dispatcher = dispatcherFor(input.dispatcher, target.hostChosenBy);
  // Most adapters plan synchronously: no await (a microtask) unless the plan is a promise.
  const planned = target.adapter.planRequest({ target, endpoint, body, bodyChanged: body !== input.body, dispatcher });
  const plan = planned instanceof Promise ? await planned : planned;
  const headers = withForwardedHeaders(plan.headers, input.requestHeaders, input.forwardHeaders);
  // Read here unless it is streamed on: a stream was asked for and the answer is SSE (or the adapter translates it).
  const collect = body['stream'] !== true ? COLLECT_ALL : target.adapter.createStreamTranslator !== undefined ? COLLECT_NONE : COLLECT_UNLESS_SSE;
  try {
    const { response, prefix } = await guardedAnswer(
      {
        dispatcher,
        url: plan.url,
        method: plan.method,
        headers,
        body: plan.body ?? input.rawBody,
        signal: input.signal,
        upstream: target.provider,
        secrets: targetSecrets(target),
        egressParam: 'custom_host',
        // Unset: the agent's long defaults (slow models stream for minutes).
        headersTimeoutMs: input.timeoutMs ?? AGENT_DEFAULT_TIMEOUT_MS,
        bodyTimeoutMs: input.timeoutMs ?? AGENT_DEFAULT_TIMEOUT_MS,
        requestTimeoutMs: input.timeoutMs,
      },
      PREFIX_BYTES,
      collect,
      // A stream settles on its first bytes: nothing is sent to the client before them, so
      // a stream that breaks before them is still a failure the strategy can retry or fall back from.
      true,
    );
    const status = response.statusCode;
    if (status < 200 || status >= 300) {
      return { kind: 'response', response, target, requestBody: body, timeoutMs: input.timeoutMs, plain: undefined };
    }
    if (prefix === undefined) {
      return { kind: 'response', response, target, requestBody: body, timeoutMs: input.timeoutMs, plain: undefined };
    }
    // A plain answer (or a "stream" that is not SSE) is read inside the attempt (by
    // guardedAnswer, up to PREFIX_BYTES), so that a body that breaks off or is not JSON is a
    // failure the strategy can retry or fall back from — not a broken 200.
    // A large answer is not held here (plain-answer-limits.ts): the relay streams it on or
    // reads it whole, capped, if something must parse it.
    if (!prefix.ended) {
      return { kind: 'response', response, target, requestBody: body, timeoutMs: input.timeoutMs, plain: { bytes: EMPTY, parsed: undefined, partial: prefix } };
    }
    const bytes = prefixBytes(prefix);
    const parsed = parseJson(bytes);
    if (parsed === undefined && /json/i.test(String(response.headers['content-type'] ?? 'json'))) {
      const error = new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered ${status} with a body that is not valid JSON.`);
      return { kind: 'error', error, target, networkOrTimeout: true };
    }
    return { kind: 'response', response, target, requestBody: body, timeoutMs: input.timeoutMs, plain: { bytes, parsed } };
  } catch (error) {
    const failure = upstreamFailure(error, target.provider, input.timeoutMs);
    // A denied destination is the gateway's own refusal: it ends the walk (no fallback, no breaker).
    if (failure.code === 'AIGW_ERR_EGRESS_DENIED') throw failure;
    return { kind: 'error', error: failure, target, networkOrTimeout: true };
  }
}

// A frozen plan's headers with nothing forwarded: merged once per plan (the plan is the
// adapter's, made once per target), frozen too, so guardedCall knows its redactor by identity.
const unforwarded = new WeakMap<Record<string, string>, Readonly<Record<string, string>>>();

function withForwardedHeaders(
  planned: Record<string, string>,
  requestHeaders: IncomingHttpHeaders,
  names: readonly string[],
): Record<string, string> {
  if (names.length === 0 && Object.isFrozen(planned)) {
    let merged = unforwarded.get(planned);
    if (merged === undefined) unforwarded.set(planned, (merged = Object.freeze({ 'accept-encoding': 'identity', ...planned })));
    return merged as Record<string, string>;
  }
  const headers: Record<string, string> = { 'accept-encoding': 'identity' };
  for (const name of names) {
    const lower = name.toLowerCase();
    const value = requestHeaders[lower];
    if (value === undefined || NOT_FORWARDABLE.has(lower)) continue;
    headers[lower] = Array.isArray(value) ? value.join(', ') : value;
  }
  // The provider's own headers (credentials, content type) win over forwarded ones.
  return Object.assign(headers, planned);
}

const EMPTY = Buffer.alloc(0);
const COLLECT_ALL: CollectRule = () => true;
const COLLECT_NONE: CollectRule = () => false;
const COLLECT_UNLESS_SSE: CollectRule = (headers) => !/event-stream/i.test(String(headers['content-type'] ?? ''));

/**
 * A partial plain answer read whole and parsed: up to the parsed-answer cap (a larger one is
 * a 502 and the upstream is aborted) and within the process's budget for large answers (a
 * 503 with retry-after when it is spent). `release` gives the budget back once the answer
 * is no longer held.
 */
export async function completePlainAnswer(response: GuardedResponse, plain: PlainAnswer, provider: string): Promise<{ plain: PlainAnswer; release: () => void }> {
  const prefix = plain.partial;
  if (prefix === undefined) return { plain, release: () => undefined };
  const limit = plainAnswerLimits().maxParsedBytes;
  const length = response.headers['content-length'];
  const declared = typeof length === 'string' && /^\d{1,15}$/.test(length) ? Number(length) : undefined;
  const release = declared !== undefined && declared > limit ? () => undefined : reservePlainAnswerBytes(declared ?? limit);
  if (release === undefined) {
    discard(response.body);
    throw new GatewayError('AIGW_ERR_OVERLOADED', `The gateway is reading too many large answers at once; retry shortly (${provider}'s answer was not read).`, {
      headers: { 'retry-after': '1' },
    });
  }
  try {
    const bytes = await readBodyBytes(response.body, limit, declared, prefix);
    return { plain: { bytes, parsed: parseJson(bytes) }, release };
  } catch (error) {
    release();
    if (error instanceof GatewayError) throw new GatewayError(error.code, `${provider}: ${error.message} Larger answers are relayed only when nothing needs to parse them (no translation, no output guardrails).`);
    throw upstreamFailure(error, provider);
  }
}

// A target's secrets, found once per target (targets live as long as their snapshot); frozen,
// so the array is the same on every call and keys guardedCall's redactor by identity.
const secretsByTarget = new WeakMap<ResolvedTarget, readonly string[]>();

function targetSecrets(target: ResolvedTarget): readonly string[] {
  let secrets = secretsByTarget.get(target);
  if (secrets === undefined) secretsByTarget.set(target, (secrets = Object.freeze(secretsOfTarget(target))));
  return secrets;
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}
