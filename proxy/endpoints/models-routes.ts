import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { callProvider, readProviderJson, relayProviderAnswer } from '../batches/provider-forwarding.ts';
import type { GatewayApiKey, GatewayState } from '../config/gateway-state.ts';
import { pinnedModels } from '../config/model-catalog.ts';
import { GatewayError } from '../errors.ts';
import { HEADER, headerValue } from '../gateway-headers.ts';
import { isRecord } from '../providers/anthropic/anthropic-wire.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { resolveTarget } from '../routing/resolve-target.ts';
import type { PlanNode } from '../config/routing-plan.ts';
import { selectRoute, usableBy } from '../routing/select-route.ts';
import { messagesRoutingHeaders } from '../ingress/anthropic-messages/messages-request.ts';

// GET /v1/models and /v1/models/{id} in OpenAI's list shape (many clients call it at start).
//   - A request that names one provider with its credential (x-gateway-provider + key,
//     virtual key, or a single-target inline config) gets that provider's own list:
//     OpenAI-compatible hosts and Azure relayed as they answer, Anthropic's translated.
//   - Otherwise the gateway's list: exactly the catalog models the calling key may select
//     (config/model-catalog.ts; its workspace and allow-list applied), each of which works
//     as `model` alone; or the models of the saved config x-gateway-config names. Anthropic's
//     clients (an anthropic-version header) get it in Anthropic's list shape.
// Every provider call is built by its adapter's forward operation and sent as a guardedCall.

export interface ModelsRouteDeps {
  readonly dispatcher: Dispatcher;
}

interface ModelEntry {
  readonly id: string;
  readonly object: 'model';
  readonly created: number;
  readonly owned_by: string;
}

const SCOPE = { gatewayScope: 'inference' } as const;

export function registerModelsRoutes(app: FastifyInstance, deps: ModelsRouteDeps): void {
  app.get('/v1/models', { config: SCOPE }, (request, reply) => listModels(deps, request, reply));
  // Model ids may hold slashes (openrouter's "anthropic/claude-…"): the rest of the path is the id.
  app.get<{ Params: { '*': string } }>('/v1/models/*', { config: SCOPE }, (request, reply) => {
    const id = request.params['*'];
    if (id === '') return listModels(deps, request, reply);
    return retrieveModel(deps, request, reply, id);
  });
}

async function listModels(deps: ModelsRouteDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const source = sourceOf(request);
  if (source.kind === 'provider') return providerModels(deps, reply, source.target, undefined);
  const models = gatewayModels(request.gateway.state, source.configId, request.gateway.apiKey);
  if (!wantsAnthropicShape(request)) return reply.send({ object: 'list', data: models });
  const data = models.map(toAnthropicModel);
  return reply.send({ data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
}

// Anthropic's SDKs (and Claude Code) send anthropic-version on every call; OpenAI's never do.
function wantsAnthropicShape(request: FastifyRequest): boolean {
  return request.headers['anthropic-version'] !== undefined;
}

/** The gateway's model in Anthropic's shape: `{ type: "model", id, display_name, created_at }`. */
function toAnthropicModel(model: ModelEntry): { type: 'model'; id: string; display_name: string; created_at: string } {
  return { type: 'model', id: model.id, display_name: model.id, created_at: new Date(model.created * 1000).toISOString() };
}

async function retrieveModel(deps: ModelsRouteDeps, request: FastifyRequest, reply: FastifyReply, id: string): Promise<FastifyReply> {
  const source = sourceOf(request);
  if (source.kind === 'provider') return providerModels(deps, reply, source.target, id);
  const found = gatewayModels(request.gateway.state, source.configId, request.gateway.apiKey).find((model) => model.id === id);
  if (found === undefined) {
    throw new GatewayError('AIGW_ERR_UNKNOWN_MODEL', `The model "${id}" does not exist or this gateway API key may not use it; GET /v1/models lists the models it can use.`, { param: 'model' });
  }
  return reply.send(wantsAnthropicShape(request) ? toAnthropicModel(found) : found);
}

type ModelSource = { readonly kind: 'gateway'; readonly configId: string | undefined } | { readonly kind: 'provider'; readonly target: ResolvedTarget };

function sourceOf(request: FastifyRequest): ModelSource {
  const headers = messagesRoutingHeaders(request.headers);
  const config = headerValue(headers[HEADER.config])?.trim();
  const named = [HEADER.provider, HEADER.virtualKey].some((name) => (headerValue(headers[name]) ?? '') !== '');
  if (!named && (config === undefined || config === '')) return { kind: 'gateway', configId: undefined };
  const caller = { apiKey: request.gateway.apiKey, model: undefined };
  if (config !== undefined && config !== '' && !config.startsWith('{')) {
    // Checks the config exists and the key may use it.
    selectRoute(headers, request.gateway.state, caller);
    request.gateway.configId = config;
    return { kind: 'gateway', configId: config };
  }
  const selection = selectRoute(headers, request.gateway.state, caller);
  const leaf = singleLeaf(selection.plan);
  const target = resolveTarget(leaf.settings, leaf.path, request.gateway.state, headers);
  request.gateway.provider = target.provider;
  return { kind: 'provider', target };
}

function singleLeaf(plan: PlanNode): PlanNode {
  let node = plan;
  for (let depth = 0; node.mode !== undefined; depth++) {
    const first = node.children[0];
    if (node.mode !== 'single' || first === undefined || depth > 8) {
      throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `/v1/models lists one provider's models, and a "${node.mode}" config names several.`, { param: HEADER.config });
    }
    node = first;
  }
  return node;
}

/**
 * The gateway's models for one key: the catalog entries it may select (its workspace's, in
 * its allow-list), or the models the saved config x-gateway-config names pins.
 */
export function gatewayModels(state: GatewayState, configId: string | undefined, apiKey: GatewayApiKey | undefined): ModelEntry[] {
  if (configId !== undefined) {
    const saved = state.configs.get(configId);
    if (saved === undefined) return [];
    return pinnedModels(saved.plan, state.providersBySlug).map(({ id, ownedBy }) => modelEntry(id, ownedBy));
  }
  const allowed = apiKey?.models ?? (apiKey === undefined ? undefined : state.catalog.workspaces.get(apiKey.workspace)?.models);
  const listed: ModelEntry[] = [];
  for (const model of state.catalog.models) {
    if (!usableBy(model.workspaces, apiKey)) continue;
    if (allowed !== undefined && !allowed.has(model.id)) continue;
    listed.push(modelEntry(model.id, model.ownedBy));
  }
  // Allowed `@slug/model` names work as `model` too.
  for (const name of allowed ?? []) {
    const slug = /^@([^/]+)\/(?!\*$)./.exec(name)?.[1];
    const provider = slug === undefined ? undefined : state.providersBySlug.get(slug);
    if (provider !== undefined && usableBy(provider.workspaces, apiKey)) listed.push(modelEntry(name, provider.provider));
  }
  return listed;
}

function modelEntry(id: string, ownedBy: string): ModelEntry {
  return { id, object: 'model', created: 0, owned_by: ownedBy };
}

/** The provider's own list or model: relayed from OpenAI-format hosts, translated from Anthropic. */
async function providerModels(deps: ModelsRouteDeps, reply: FastifyReply, target: ResolvedTarget, id: string | undefined): Promise<FastifyReply> {
  const path = id === undefined ? 'models' : `models/${encodeURIComponent(id)}`;
  const family = target.adapter.family;
  if (family === 'openai' || family === 'azure-openai') {
    return relayProviderAnswer(reply, target, await callProvider(deps.dispatcher, target, { method: 'GET', path }));
  }
  if (family !== 'anthropic') {
    throw new GatewayError(
      'AIGW_ERR_UNSUPPORTED_ENDPOINT',
      `Provider "${target.provider}" has no model list the gateway can read; /v1/models without provider headers lists the models of saved configs.`,
      { param: HEADER.provider },
    );
  }
  // Built by the Anthropic adapter's forward operation, like every forwarded call.
  const answer = await callProvider(deps.dispatcher, target, {
    method: 'GET',
    path,
    query: id === undefined ? new URLSearchParams({ limit: '1000' }) : undefined,
  });
  reply.header(HEADER.provider, target.provider);
  const json = await readProviderJson(target, answer);
  if (id !== undefined) return reply.send(fromAnthropicModel(json));
  const data = Array.isArray(json['data']) ? json['data'] : [];
  return reply.send({ object: 'list', data: data.filter(isRecord).map(fromAnthropicModel) });
}

/** `{ id, type: "model", display_name, created_at }` → OpenAI's model object. */
function fromAnthropicModel(model: Record<string, unknown>): ModelEntry {
  const created = typeof model['created_at'] === 'string' ? Math.floor(Date.parse(model['created_at']) / 1000) : 0;
  return { id: String(model['id'] ?? ''), object: 'model', created: Number.isFinite(created) ? created : 0, owned_by: 'anthropic' };
}
