import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import type { ResponseCache, CacheLookup, CacheRequest } from '../cache/response-cache.ts';
import type { AnswerOrigin } from '../cache/response-cache-store.ts';
import type { IngressTranslator } from '../ingress/ingress-translator.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import { HEADER, headerValue } from '../gateway-headers.ts';
import type { GatewayMetrics } from '../observability/gateway-metrics.ts';
import type { RequestContext } from '../request-context.ts';
import type { SseFrameStage } from '../streams/sse-frame-pipeline.ts';
import type { PlanNode } from '../config/routing-plan.ts';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';

// The cache on the request path (DESIGN.md §2): look up before routing, answer a HIT
// without calling a provider (replayed as SSE for stream requests, in the client protocol's
// events), and store fresh 2xx answers — plain or assembled from a stream — after the
// response, never delaying it. What differs per protocol comes from its ingress translator.

export interface CacheFlow {
  readonly request: CacheRequest;
  readonly lookup: CacheLookup;
}

/**
 * The cache request for this call, or undefined when the config has no `cache`. The
 * calling key's workspace and the plan's targets are always part of it: a namespace
 * header narrows within them, never across.
 */
export function cacheRequestOf(
  plan: PlanNode,
  configId: string | undefined,
  context: RequestContext,
  endpoint: InferenceEndpoint,
  body: Record<string, unknown>,
  headers: Record<string, string | string[] | undefined>,
  ingress: IngressTranslator,
): CacheRequest | undefined {
  const settings = plan.settings.cache;
  if (settings === undefined) return undefined;
  const namespace = headerValue(headers[HEADER.cacheNamespace]);
  const key = context.apiKey;
  return {
    mode: settings.mode,
    maxAgeSeconds: settings.max_age,
    // Every cached route needs a key; a request without one gets a partition of its own.
    workspace: key === undefined ? '\u0000no-key' : key.workspace,
    organisation: key?.organisation,
    endpoint,
    identity: identityOf(plan, configId, context.state),
    body: ingress.cacheKeyBody(body, headers),
    metadata: context.metadata,
    namespace: namespace === '' ? undefined : namespace,
    forceRefresh: headerValue(headers[HEADER.cacheForceRefresh])?.toLowerCase() === 'true',
  };
}

// Per snapshot: a reload that moves a saved provider to another host or key changes the identity.
const identities = new WeakMap<GatewayState, WeakMap<PlanNode, string>>();

/**
 * Target identity for the key: the saved config's id (if any) and a digest of every leaf's
 * resolved provider, host and credential — answers from different accounts or hosts never
 * mix. The model is in the body, which the key covers.
 */
function identityOf(plan: PlanNode, configId: string | undefined, state: GatewayState): string {
  let perState = identities.get(state);
  if (perState === undefined) {
    perState = new WeakMap();
    identities.set(state, perState);
  }
  const cached = perState.get(plan);
  if (cached !== undefined) return cached;
  const leaves: unknown[] = [];
  const walk = (node: PlanNode): void => {
    if (node.mode !== undefined) return node.children.forEach(walk);
    const { provider, virtual_key: virtualKey, custom_host: customHost, api_key: apiKey } = node.settings;
    const saved =
      virtualKey !== undefined ? state.providersByVirtualKey.get(virtualKey) : provider?.startsWith('@') === true ? state.providersBySlug.get(provider.slice(1)) : undefined;
    const key = saved?.apiKey ?? apiKey;
    leaves.push([saved?.provider ?? provider, saved === undefined ? virtualKey : `@${saved.slug}`, customHost ?? saved?.customHost, key === undefined ? '' : sha(key)]);
  };
  walk(plan);
  const digest = sha(JSON.stringify(leaves));
  const identity = configId === undefined ? `inline:${digest}` : `config:${configId}:${digest}`;
  perState.set(plan, identity);
  return identity;
}

function sha(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 32);
}

export function countLookup(metrics: GatewayMetrics, lookup: CacheLookup, context: RequestContext, reply: FastifyReply): void {
  context.cacheStatus = lookup.status;
  reply.header(HEADER.cacheStatus, lookup.status);
  if (lookup.status !== 'DISABLED') metrics.cacheRequests.inc({ status: lookup.status });
}

/** Answers from the cache; undefined when the stored answer cannot serve this request. */
export function replyFromCache(
  reply: FastifyReply,
  lookup: CacheLookup,
  endpoint: InferenceEndpoint,
  stream: boolean,
  includeUsage: boolean,
  context: RequestContext,
  ingress: IngressTranslator,
): FastifyReply | undefined {
  const answer = lookup.answer;
  if (answer === undefined) return undefined;
  // The record of a hit names who gave the stored answer, with the same `model` meaning as a miss.
  context.cacheProvider = answer.provider;
  if (answer.model !== undefined) context.model = answer.model;
  reply.header(HEADER.lastUsedOptionIndex, 'cache');
  reply.header(HEADER.retryAttemptCount, '0');
  if (!stream) {
    return reply.code(200).header('content-type', 'application/json; charset=utf-8').send(answer.body);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.body);
  } catch {
    return undefined;
  }
  const sse = ingress.replayAsSse(endpoint, parsed, includeUsage);
  if (sse === undefined) return undefined;
  context.ttftMs = Number(process.hrtime.bigint() - context.startedAt) / 1e6;
  return reply.code(200).header('content-type', 'text/event-stream; charset=utf-8').header('cache-control', 'no-cache').send(sse);
}

/** What the relay calls with a fresh successful answer, to store it off the response path. */
export interface AnswerObserver {
  /** A plain answer's bytes and its parsed JSON. */
  plain(bytes: Buffer, parsed: unknown): void;
  /**
   * A stream's observer: a stage of the relay's frame pipeline (frames as they pass, before
   * any usage chunk is removed). `released`: for a held stream, whether output checks let it out.
   */
  stream(released?: Promise<boolean>): SseFrameStage;
}

export function cacheObserver(cache: ResponseCache, flow: CacheFlow, ingress: IngressTranslator, origin?: AnswerOrigin): AnswerObserver | undefined {
  const { request, lookup } = flow;
  if (lookup.status !== 'MISS' && lookup.status !== 'REFRESH') return undefined;
  return {
    plain(bytes, parsed) {
      if (!isAnswer(parsed)) return;
      void cache.save(request, lookup, bytes.toString('utf8'), undefined, origin);
    },
    stream(released) {
      const assembler = ingress.streamAssembler(request.endpoint);
      return {
        frame: (frame) => assembler.frame(frame),
        end: () => {
          const result = assembler.result();
          if (result === undefined) return;
          const save = (): void => void cache.save(request, lookup, JSON.stringify(result), undefined, origin);
          if (released === undefined) save();
          else void released.then((passed) => passed && save());
        },
      };
    },
  };
}

/** Only real answers are stored: an object without an `error` member. */
function isAnswer(parsed: unknown): boolean {
  return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && !('error' in parsed);
}
