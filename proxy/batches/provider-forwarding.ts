import type { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import { HEADER } from '../gateway-headers.ts';
import { azureSettingsOf } from '../providers/azure-openai-options.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { resolveTarget } from '../routing/resolve-target.ts';
import type { PlanNode } from '../routing/routing-plan.ts';
import { selectRoute } from '../routing/select-route.ts';
import { guardedCall, MAX_ERROR_BODY_BYTES, readGuardedBody, relayedHeaders, secretsOfTarget, type GuardedResponse } from '../upstream/guarded-call.ts';
import { readBodyText } from '../upstream/read-body.ts';

// Batches, files and fine-tuning jobs forwarded to one provider (OpenAI-compatible hosts
// and Azure OpenAI): the provider comes from the request's headers or config exactly as
// for inference, must be a single target, and answers are relayed as they are — bodies
// streamed (file uploads and downloads are never held whole), errors in the OpenAI shape.
// Every call is a guardedCall: egress policy (400 when denied), no redirects, timeouts,
// credentials redacted from what is relayed, only allow-listed headers relayed.

const FORWARDING_FAMILIES = new Set(['openai', 'azure-openai']);
/** Largest provider JSON read whole (list pages merged with gateway objects). */
const MAX_PROVIDER_JSON_BYTES = 64 * 1024 * 1024;
/** Forwarded calls are control calls: headers within 2 minutes; uploads and downloads may idle 5. */
const FORWARD_HEADERS_TIMEOUT_MS = 120_000;
const FORWARD_BODY_TIMEOUT_MS = 300_000;

export interface ProviderCall {
  readonly method: 'GET' | 'POST' | 'DELETE';
  /** Below the provider's base URL: `batches`, `files/file-1/content`… */
  readonly path: string;
  readonly query?: URLSearchParams;
  readonly body?: Buffer | Readable;
  readonly headers?: Readonly<Record<string, string>>;
}

/** The one provider a forwarded request names; 400 naming the header when there is none. */
export function forwardingTarget(request: FastifyRequest, route: string): ResolvedTarget {
  const state = request.gateway.state;
  const selection = selectRoute(request.headers, state);
  request.gateway.configId = selection.configId;
  const leaf = singleLeaf(selection.plan, route);
  const target = resolveTarget(leaf.settings, leaf.path, state, request.headers);
  if (!FORWARDING_FAMILIES.has(target.adapter.family)) {
    throw new GatewayError(
      'AIGW_ERR_UNSUPPORTED_ENDPOINT',
      `Provider "${target.provider}" has no ${route} endpoint the gateway can forward to (OpenAI-compatible providers and azure-openai do).`,
      { param: HEADER.provider },
    );
  }
  request.gateway.provider = target.provider;
  return target;
}

/** Undefined when the request names no single provider (a strategy config): lists then hold gateway objects only. */
export function optionalForwardingTarget(request: FastifyRequest, route: string): ResolvedTarget | undefined {
  const selection = selectRoute(request.headers, request.gateway.state);
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
  const { url, headers } = providerRequest(target, call);
  return guardedCall({
    dispatcher,
    url,
    method: call.method,
    headers,
    body: call.body ?? null,
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

function providerRequest(target: ResolvedTarget, call: ProviderCall): { url: URL; headers: Record<string, string> } {
  const headers: Record<string, string> = { 'accept-encoding': 'identity', ...target.headers, ...call.headers };
  const query = new URLSearchParams(call.query);
  let base: string;
  if (target.adapter.family === 'azure-openai') {
    const settings = azureSettingsOf(target.options);
    const root = target.baseUrl.replace(/\/openai$/, '');
    // The GA data-plane API takes ?api-version=; without one, the v1 API.
    if (settings.apiVersion !== undefined) {
      base = `${root}/openai`;
      query.set('api-version', settings.apiVersion);
    } else {
      base = `${root}/openai/v1`;
    }
    if (settings.credential !== undefined) {
      const bearer = settings.authMode === 'entra' || (settings.authMode === 'auto' && /^eyJ[\w-]*\.[\w-]+\.[\w-]*$/.test(settings.credential));
      if (bearer) headers['authorization'] = `Bearer ${settings.credential}`;
      else headers['api-key'] = settings.credential;
    }
  } else {
    base = target.baseUrl;
    if (target.apiKey !== undefined && target.apiKey !== '') headers['authorization'] = `Bearer ${target.apiKey}`;
  }
  const search = query.toString();
  return { url: new URL(`${base}/${call.path}${search === '' ? '' : `?${search}`}`), headers };
}

