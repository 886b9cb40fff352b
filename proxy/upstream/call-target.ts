import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import type { InferenceEndpoint } from '../endpoints/body-validation.ts';
import { GatewayError } from '../errors.ts';
import { readBodyBytes } from './read-body.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';

// One upstream attempt for one resolved target: override_params, the provider's plan,
// forwarded headers, per-attempt timeouts. Network failures and timeouts come back as
// GatewayErrors (never thrown), so the strategy walk can decide what happens next.

export type AttemptResult =
  | {
      readonly kind: 'response';
      readonly response: Dispatcher.ResponseData;
      readonly target: ResolvedTarget;
      /** The body as sent upstream (overrides applied). */
      readonly requestBody: Record<string, unknown>;
      /** The stream idle bound in force, for the relay's timeout event. */
      readonly timeoutMs: number | undefined;
      /** A plain (non-stream) 2xx answer, already read whole and parsed (undefined for streams). */
      readonly plain: PlainAnswer | undefined;
    }
  | { readonly kind: 'error'; readonly error: GatewayError; readonly target: ResolvedTarget; readonly networkOrTimeout: boolean };

export interface PlainAnswer {
  readonly bytes: Buffer;
  /** The parsed JSON, or undefined when the answer is not JSON. */
  readonly parsed: unknown;
}

/** Largest plain answer read (embeddings of long batches can be tens of MB). */
const MAX_PLAIN_ANSWER = 64 * 1024 * 1024;

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

export async function attemptTarget(input: AttemptInput): Promise<AttemptResult> {
  const { target, endpoint } = input;
  const overrides = target.node.override_params;
  const body = overrides !== undefined && Object.keys(overrides).length > 0 ? { ...input.body, ...overrides } : input.body;
  const plan = await target.adapter.planRequest({ target, endpoint, body, bodyChanged: body !== input.body, dispatcher: input.dispatcher });
  const headers = withForwardedHeaders(plan.headers, input.requestHeaders, input.forwardHeaders);
  const url = new URL(plan.url);
  try {
    const response = await input.dispatcher.request({
      origin: url.origin,
      path: url.pathname + url.search,
      method: plan.method,
      headers,
      body: plan.body ?? input.rawBody,
      signal: input.signal,
      ...(input.timeoutMs === undefined ? {} : { headersTimeout: input.timeoutMs, bodyTimeout: input.timeoutMs }),
    });
    const status = response.statusCode;
    if (status < 200 || status >= 300) {
      return { kind: 'response', response, target, requestBody: body, timeoutMs: input.timeoutMs, plain: undefined };
    }
    const eventStream = /event-stream/i.test(String(response.headers['content-type'] ?? ''));
    if (body['stream'] === true && (eventStream || target.adapter.createStreamTransform !== undefined)) {
      // Nothing is sent to the client before the first chunk: a stream that breaks before it
      // is still a failure the strategy can retry or fall back from.
      await firstChunk(response.body);
      return { kind: 'response', response, target, requestBody: body, timeoutMs: input.timeoutMs, plain: undefined };
    }
    // A plain answer (or a "stream" that is not SSE) is read here, inside the attempt, so that
    // a body that breaks off or is not JSON is a failure the strategy can retry or fall back
    // from — not a broken 200.
    const bytes = await readBodyBytes(response.body, MAX_PLAIN_ANSWER);
    const parsed = parseJson(bytes);
    if (parsed === undefined && /json/i.test(String(response.headers['content-type'] ?? 'json'))) {
      const error = new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered ${status} with a body that is not valid JSON.`);
      return { kind: 'error', error, target, networkOrTimeout: true };
    }
    return { kind: 'response', response, target, requestBody: body, timeoutMs: input.timeoutMs, plain: { bytes, parsed } };
  } catch (error) {
    // A denied destination is the gateway's own refusal: it ends the walk (no fallback, no breaker).
    if ((error as { code?: string }).code === 'AIGW_ERR_EGRESS_DENIED') {
      throw new GatewayError('AIGW_ERR_EGRESS_DENIED', (error as Error).message, { param: 'custom_host', cause: error });
    }
    return { kind: 'error', error: upstreamFailure(error, target.provider, input.timeoutMs), target, networkOrTimeout: true };
  }
}

function withForwardedHeaders(
  planned: Record<string, string>,
  requestHeaders: IncomingHttpHeaders,
  names: readonly string[],
): Record<string, string> {
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

/** A failed upstream call as a gateway error: 408 for our request_timeout, 504/502 otherwise. */
export function upstreamFailure(error: unknown, provider: string, timeoutMs: number | undefined): GatewayError {
  if (error instanceof GatewayError) return error;
  const code = (error as { code?: string }).code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
    if (timeoutMs !== undefined) {
      return new GatewayError('AIGW_ERR_REQUEST_TIMEOUT', `Request to ${provider} timed out after ${timeoutMs} ms (request_timeout).`, {
        cause: error,
      });
    }
    return new GatewayError('AIGW_ERR_UPSTREAM_TIMEOUT', `${provider} did not answer in time.`, { cause: error });
  }
  if (code === 'UND_ERR_CONNECT_TIMEOUT') {
    return new GatewayError('AIGW_ERR_UPSTREAM_TIMEOUT', `Connecting to ${provider} timed out.`, { cause: error });
  }
  const reason = typeof code === 'string' ? code : error instanceof Error ? error.name : 'network error';
  return new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', `Could not reach ${provider}: ${reason}`, { cause: error });
}

/** Resolves when the body has data (without consuming it); rejects if it fails or is empty. */
function firstChunk(body: Dispatcher.ResponseData['body']): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error): void => {
      body.off('readable', onReadable);
      body.off('error', onError);
      body.off('end', onEnd);
      if (error === undefined) resolve();
      else reject(error);
    };
    const onReadable = (): void => done();
    const onError = (error: Error): void => done(error);
    const onEnd = (): void => done(Object.assign(new Error('the stream ended before any data'), { code: 'UND_ERR_SOCKET' }));
    body.on('readable', onReadable);
    body.once('error', onError);
    body.once('end', onEnd);
  });
}


function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}
