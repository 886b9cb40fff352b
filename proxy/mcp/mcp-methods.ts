import {
  CallToolRequestSchema,
  EmptyResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  GetPromptResultSchema,
  ListPromptsRequestSchema,
  ListPromptsResultSchema,
  ListResourcesRequestSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesRequestSchema,
  ListResourceTemplatesResultSchema,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
  type Prompt,
  type Resource,
  type ResourceTemplate,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { BudgetEnforcer } from '../budgets/budget-enforcer.ts';
import { reserveToolCall, type SettleToolCall } from '../budgets/mcp-charging.ts';
import type { UsageLimitPolicy } from '../budgets/usage-limit-schema.ts';
import { isGatewayError } from '../errors.ts';
import type { RequestFacts } from '../ratelimit/policy-matching.ts';
import type { RateLimitPolicy } from '../ratelimit/policy-schema.ts';
import type { RateLimiter } from '../ratelimit/rate-limiter.ts';
import type { McpAccounting, CallTarget } from './mcp-accounting.ts';
import { exposedName, exposedUri, resolveExposed, type CallContext, type McpCalls } from './mcp-calls.ts';
import { NAME_SEPARATOR, URI_SEPARATOR, type McpServer } from './mcp-catalog.ts';
import { isObject, MCP_ERROR, RpcError } from './mcp-errors.ts';
import type { ResultSchema } from './mcp-upstream.ts';

// The gateway's MCP methods, one function each, shared by the SDK server (initialize,
// batches) and the direct path (single requests): lists merged from the session's servers,
// calls resolved to one server after authorization, rate limits and budgets.

export interface MethodHost {
  readonly calls: McpCalls;
  readonly accounting: McpAccounting;
  readonly rateLimiter: RateLimiter | undefined;
  dynamicPolicies(): Iterable<RateLimitPolicy>;
  readonly budgets: BudgetEnforcer | undefined;
  dynamicUsageLimits(): readonly UsageLimitPolicy[];
  readonly dispatcher: import('undici').Dispatcher;
}

type Params = Record<string, unknown>;
type Handler = (host: MethodHost, context: CallContext, params: Params, signal: AbortSignal) => Promise<unknown>;

/**
 * A tool result taken as the upstream sent it (an object): it is relayed, not re-read, so
 * a full zod parse of every answer is work with nothing to show for it.
 */
const TOOL_RESULT: ResultSchema<Record<string, unknown>> & { safeParse(value: unknown): unknown } = {
  parse: (value) => value as Record<string, unknown>,
  safeParse: (value) => (isObject(value) ? { success: true, data: value } : { success: false, error: new RpcError(ErrorCode.InternalError, 'The MCP server answered a tool call with something that is not a result.') }),
};

const unknownResource = (uri: string): RpcError => new RpcError(ErrorCode.InvalidParams, `Unknown resource: ${uri.slice(0, 200)}`);

const HANDLERS: Record<string, Handler> = {
  'tools/list': (host, context, _params, signal) =>
    host.accounting.tracked(context, 'tools/list', { server: context.scope?.name, tool: undefined }, undefined, async () => ({
      tools: await host.calls.listAll<Tool>(context, 'tools', ListToolsResultSchema, signal, (upstream, tool) => {
        if (!upstream.allowsTool(context.principal, tool.name)) return undefined;
        const exposed = upstream.exposedTool(tool.name);
        return exposed === undefined ? undefined : { ...tool, name: exposedName(context, upstream, exposed) };
      }),
    })),

  'tools/call': (host, context, params, signal) => {
    const name = params['name'] as string;
    const resolved = resolveExposed(context, name, NAME_SEPARATOR);
    const original = resolved === undefined ? undefined : resolved.server.originalTool(resolved.name);
    return host.accounting.tracked(context, 'tools/call', { server: resolved?.server.name, tool: original ?? name }, params, async (target) => {
      // Unknown, hidden and not-allowed tools get the same answer: the caller learns nothing of tools it may not call.
      if (resolved === undefined || original === undefined || !resolved.server.allowsTool(context.principal, original)) {
        throw new RpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
      }
      const server = resolved.server;
      await admit(host, context, server, original);
      const price = server.priceOf(original);
      const settle = price === undefined ? undefined : await reserve(host, context, server, original, price);
      let answered = false;
      try {
        const guard = server.guardrails === undefined && server.guardrailProblem === undefined ? undefined : await import('./mcp-guardrails.ts');
        const metadata = context.request.gateway.metadata;
        if (guard !== undefined) await guard.checkArguments(server, original, params['arguments'], metadata, signal, host.dispatcher);
        const result = await host.calls.call(context, server, 'tools/call', { ...params, name: original }, TOOL_RESULT, signal);
        answered = true;
        target.costUsd = price;
        if (guard !== undefined) await guard.checkResult(server, original, result, metadata, signal, host.dispatcher);
        return result;
      } finally {
        settle?.(answered);
      }
    });
  },

  'prompts/list': (host, context, _params, signal) =>
    host.accounting.tracked(context, 'prompts/list', { server: context.scope?.name, tool: undefined }, undefined, async () => ({
      prompts: await host.calls.listAll<Prompt>(context, 'prompts', ListPromptsResultSchema, signal, (upstream, prompt) => ({ ...prompt, name: exposedName(context, upstream, prompt.name) })),
    })),

  'prompts/get': (host, context, params, signal) => {
    const name = params['name'] as string;
    const resolved = resolveExposed(context, name, NAME_SEPARATOR);
    return host.accounting.tracked(context, 'prompts/get', { server: resolved?.server.name, tool: name }, params, async () => {
      if (resolved === undefined) throw new RpcError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
      await admit(host, context, resolved.server, undefined);
      return host.calls.call(context, resolved.server, 'prompts/get', { ...params, name: resolved.name }, GetPromptResultSchema, signal);
    });
  },

  'resources/list': (host, context, _params, signal) =>
    host.accounting.tracked(context, 'resources/list', { server: context.scope?.name, tool: undefined }, undefined, async () => ({
      resources: await host.calls.listAll<Resource>(context, 'resources', ListResourcesResultSchema, signal, (upstream, resource) => ({ ...resource, uri: exposedUri(context, upstream, resource.uri) })),
    })),

  'resources/templates/list': (host, context, _params, signal) =>
    host.accounting.tracked(context, 'resources/templates/list', { server: context.scope?.name, tool: undefined }, undefined, async () => ({
      resourceTemplates: await host.calls.listAll<ResourceTemplate>(context, 'resourceTemplates', ListResourceTemplatesResultSchema, signal, (upstream, template) => ({
        ...template,
        uriTemplate: exposedUri(context, upstream, template.uriTemplate),
      })),
    })),

  'resources/read': (host, context, params, signal) => {
    const uri = params['uri'] as string;
    const resolved = resolveExposed(context, uri, URI_SEPARATOR);
    return host.accounting.tracked(context, 'resources/read', { server: resolved?.server.name, tool: undefined }, params, async () => {
      if (resolved === undefined) throw unknownResource(uri);
      await admit(host, context, resolved.server, undefined);
      const result = (await host.calls.call(context, resolved.server, 'resources/read', { ...params, uri: resolved.name }, ReadResourceResultSchema, signal)) as { contents: Array<{ uri: string }> };
      return { ...result, contents: result.contents.map((content) => ({ ...content, uri: exposedUri(context, resolved.server, content.uri) })) };
    });
  },

  'resources/subscribe': (host, context, params, signal) => subscription(host, context, 'resources/subscribe', params, signal),
  'resources/unsubscribe': (host, context, params, signal) => subscription(host, context, 'resources/unsubscribe', params, signal),
};

function subscription(host: MethodHost, context: CallContext, method: string, params: Params, signal: AbortSignal): Promise<unknown> {
  const uri = params['uri'] as string;
  const resolved = resolveExposed(context, uri, URI_SEPARATOR);
  return host.accounting.tracked(context, method, { server: resolved?.server.name, tool: undefined }, params, async () => {
    if (resolved === undefined) throw unknownResource(uri);
    await admit(host, context, resolved.server, undefined);
    return host.calls.call(context, resolved.server, method, { ...params, uri: resolved.name }, EmptyResultSchema, signal);
  });
}

/** The request schema of each method, for callers that did not go through the SDK server. */
const REQUEST_SCHEMAS: Record<string, { safeParse(value: unknown): { success: boolean } }> = {
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
  'prompts/list': ListPromptsRequestSchema,
  'prompts/get': GetPromptRequestSchema,
  'resources/list': ListResourcesRequestSchema,
  'resources/templates/list': ListResourceTemplatesRequestSchema,
  'resources/read': ReadResourceRequestSchema,
  'resources/subscribe': SubscribeRequestSchema,
  'resources/unsubscribe': UnsubscribeRequestSchema,
};

export function isGatewayMethod(method: string): boolean {
  return Object.hasOwn(HANDLERS, method);
}

/**
 * Runs a gateway method. `validated` params went through the SDK server's schema already;
 * others are checked here (tools/call by hand: it is the hot path).
 */
export function runMethod(host: MethodHost, context: CallContext, method: string, params: unknown, signal: AbortSignal, validated: boolean): Promise<unknown> {
  const handler = Object.hasOwn(HANDLERS, method) ? HANDLERS[method] : undefined;
  if (handler === undefined) return Promise.reject(new RpcError(ErrorCode.MethodNotFound, 'Method not found'));
  const given = params ?? {};
  if (!validated && !paramsFit(method, given)) return Promise.reject(new RpcError(ErrorCode.InvalidParams, `Invalid params for ${method}.`));
  return handler(host, context, given as Params, signal);
}

function paramsFit(method: string, params: unknown): boolean {
  if (!isObject(params)) return false;
  if (method === 'tools/call') {
    const args = params['arguments'];
    const meta = params['_meta'];
    return typeof params['name'] === 'string' && (args === undefined || isObject(args)) && (meta === undefined || isObject(meta));
  }
  return REQUEST_SCHEMAS[method]?.safeParse({ method, params }).success === true;
}

function factsOf(context: CallContext, server: McpServer, tool: string | undefined): RequestFacts {
  return {
    workspace_id: context.principal.workspace,
    api_key: context.principal.keyId,
    provider: undefined,
    model: undefined,
    config: undefined,
    metadata: context.request.gateway.metadata,
    mcp_server: server.name,
    mcp_tool: tool,
  } as RequestFacts;
}

const targetsMcp = (policy: RateLimitPolicy): boolean =>
  policy.type === 'requests' && policy.conditions.some((condition) => condition.key === 'mcp_server' || condition.key === 'mcp_tool');

/** Rate-limit policies that target MCP (an mcp_server or mcp_tool condition). */
async function admit(host: MethodHost, context: CallContext, server: McpServer, tool: string | undefined): Promise<void> {
  const limiter = host.rateLimiter;
  if (limiter === undefined) return;
  // Collected without spreading both lists per call: most gateways have no MCP policy at all.
  let policies: RateLimitPolicy[] | undefined;
  for (const policy of context.request.gateway.state.document.rateLimitPolicies) if (targetsMcp(policy)) (policies ??= []).push(policy);
  for (const policy of host.dynamicPolicies()) if (targetsMcp(policy)) (policies ??= []).push(policy);
  if (policies === undefined) return;
  try {
    await limiter.admit(policies, factsOf(context, server, tool));
  } catch (error) {
    if (isGatewayError(error) && error.code === 'AIGW_ERR_RATE_LIMITED') {
      throw new RpcError(MCP_ERROR.rateLimited, error.message, { retry_after_seconds: Number(error.headers?.['retry-after'] ?? 1) });
    }
    throw error;
  }
}

/** Reserves a priced tool call on the usage-limit policies it matches; refused with the policy named. */
async function reserve(host: MethodHost, context: CallContext, server: McpServer, tool: string, price: number): Promise<SettleToolCall | undefined> {
  const fromState = context.request.gateway.state.document.usageLimitPolicies;
  const fromApi = host.dynamicUsageLimits();
  const policies = fromApi.length === 0 ? fromState : [...fromState, ...fromApi];
  try {
    return await reserveToolCall(host.budgets, policies, factsOf(context, server, tool), price);
  } catch (error) {
    if (isGatewayError(error) && error.code === 'AIGW_ERR_BUDGET_EXCEEDED') {
      throw new RpcError(MCP_ERROR.budgetExceeded, error.message, { policy: error.headers?.['x-gateway-budget-policy'], remaining: error.headers?.['x-gateway-budget-remaining'] });
    }
    throw error;
  }
}
