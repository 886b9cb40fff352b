import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import { HEADER } from '../gateway-headers.ts';
import type { ForwardedCall, ForwardOperation, ResolvedTarget } from '../providers/provider-adapter.ts';
import { resolveTarget } from '../routing/resolve-target.ts';
import type { PlanNode } from '../config/routing-plan.ts';
import { selectRoute } from '../routing/select-route.ts';
import { guardedCall, MAX_ERROR_BODY_BYTES, readGuardedBody, relayedHeaders, secretsOfTarget, type GuardedResponse } from '../upstream/guarded-call.ts';
import { readBodyText } from '../upstream/read-body.ts';
import { dispatcherFor } from '../upstream/upstream-agent.ts';

// Batches, files, fine-tuning jobs and the other OpenAI routes forwarded to one provider:
// the provider comes from the request's headers or config exactly as for inference, must
// be a single target whose adapter forwards (OpenAI-compatible hosts, Azure OpenAI), and
// answers are relayed as they are — bodies streamed (file uploads and downloads are never
// held whole), errors in the OpenAI shape. The adapter builds the call (URL, credentials);
// every call is a guardedCall: egress policy (400 when denied), no redirects, timeouts,
// credentials redacted from what is relayed, only allow-listed headers relayed.

/** Largest provider JSON read whole (list pages merged with gateway objects). */
const MAX_PROVIDER_JSON_BYTES = 64 * 1024 * 1024;
/** Forwarded calls are control calls: headers within 2 minutes; uploads and downloads may idle 5. */
const FORWARD_HEADERS_TIMEOUT_MS = 120_000;
const FORWARD_BODY_TIMEOUT_MS = 300_000;

/** A forwarded call as the routes describe it; the target's adapter puts it in the provider's form. */
export type ProviderCall = ForwardedCall;

/** The one provider a forwarded request names; 400 naming the header when there is none. */
export function forwardingTarget(request: FastifyRequest, route: string): ResolvedTarget {
  const state = request.gateway.state;
  // With the caller: workspace limits and a key's allow-list hold here too.
  const selection = selectRoute(request.headers, state, { apiKey: request.gateway.apiKey, model: undefined });
  request.gateway.configId = selection.configId;
  const leaf = singleLeaf(selection.plan, route);
  const target = resolveTarget(leaf.settings, leaf.path, state, request.headers);
  forwardOf(target, route);
  request.gateway.provider = target.provider;
  return target;
}

/** Undefined when the request names no single provider (a strategy config): lists then hold gateway objects only. */
export function optionalForwardingTarget(request: FastifyRequest, route: string): ResolvedTarget | undefined {
  const selection = selectRoute(request.headers, request.gateway.state, { apiKey: request.gateway.apiKey, model: undefined });
  if (selection.plan.mode !== undefined && selection.plan.mode !== 'single') return undefined;
  return forwardingTarget(request, route);
}

function singleLeaf(plan: PlanNode, route: string): PlanNode {
  let node = plan;
  for (let depth = 0; node.mode !== undefined; depth++) {
    const first = node.children[0];
    if (node.mode !== 'single' || first === undefined || depth > 8) {
      throw new GatewayError(
        'AIGW_ERR_INVALID_CONFIG',
        `${route} is forwarded to one provider, and a "${node.mode}" config names several. Send a provider, virtual key or single-target config (gateway-managed batches, completion_window "immediate", do run through strategies).`,
        { param: HEADER.config },
      );
    }
    node = first;
  }
  return node;
}

/** Calls the provider; network failures become the gateway's 502/504. */
export async function callProvider(dispatcher: Dispatcher, target: ResolvedTarget, call: ProviderCall): Promise<GuardedResponse> {
  const planned = forwardOf(target, `/v1/${call.path}`)(target, call);
  return guardedCall({
    dispatcher: dispatcherFor(dispatcher, target.hostChosenBy),
    url: planned.url,
    method: planned.method,
    headers: { 'accept-encoding': 'identity', ...planned.headers },
    body: planned.body,
    upstream: target.provider,
    secrets: secretsOfTarget(target),
    egressParam: target.customHost ? 'custom_host' : HEADER.provider,
    headersTimeoutMs: FORWARD_HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: FORWARD_BODY_TIMEOUT_MS,
  });
}

/** Relays a provider answer: success bytes streamed as they are, errors normalised. */
export async function relayProviderAnswer(reply: FastifyReply, target: ResolvedTarget, answer: GuardedResponse): Promise<FastifyReply> {
  reply.header(HEADER.provider, target.provider);
  const headers = relayedHeaders(answer.headers, answer.redact);
  if (answer.statusCode < 200 || answer.statusCode >= 300) {
    const body = await providerError(target, answer);
    delete headers['content-type'];
    delete headers['content-encoding'];
    return reply.code(answer.statusCode).headers(headers).header('content-type', 'application/json; charset=utf-8').send(body);
  }
  // A download streams through with its length; nothing of it is held.
  const length = answer.headers['content-length'];
  if (typeof length === 'string' && /^\d+$/.test(length)) headers['content-length'] = length;
  return reply.code(answer.statusCode).headers(headers).send(answer.body);
}

/** A provider error body, bounded, normalised to the OpenAI shape, credentials redacted. */
async function providerError(target: ResolvedTarget, answer: GuardedResponse) {
  const text = answer.redact(await readBodyText(answer.body, MAX_ERROR_BODY_BYTES));
  const body = target.adapter.normaliseError(answer.statusCode, text, target.provider);
  body.error.message = answer.redact(body.error.message);
  return body;
}

/** A provider's JSON answer (for lists merged with gateway objects); errors thrown in the OpenAI shape. */
export async function readProviderJson(target: ResolvedTarget, answer: GuardedResponse): Promise<Record<string, unknown>> {
  if (answer.statusCode < 200 || answer.statusCode >= 300) {
    const body = await providerError(target, answer);
    throw new GatewayError('AIGW_ERR_INVALID_BODY', body.error.message, { status: answer.statusCode, param: body.error.param });
  }
  const text = answer.redact((await readGuardedBody(answer, MAX_PROVIDER_JSON_BYTES)).toString('utf8'));
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // reported below
  }
  throw new GatewayError('AIGW_ERR_UPSTREAM_INVALID_RESPONSE', `${target.provider} answered with a body that is not a JSON object.`);
}

/** The target's forward operation; a 400 naming the provider when its family forwards nothing. */
function forwardOf(target: ResolvedTarget, route: string): ForwardOperation {
  const forward = target.adapter.forward;
  if (forward !== undefined && (target.adapter.forwardsRoute?.(route) ?? true)) return forward;
  throw new GatewayError(
    'AIGW_ERR_UNSUPPORTED_ENDPOINT',
    `Provider "${target.provider}" has no ${route} endpoint the gateway can forward to (OpenAI-compatible providers and azure-openai do).`,
    { param: HEADER.provider },
  );
}
