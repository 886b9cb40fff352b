import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { GatewayApiKey } from '../../proxy/config/gateway-state.ts';
import { GatewayError } from '../../proxy/errors.ts';
import { conditionWorkspace, neverMatchProblem } from '../../proxy/ratelimit/policy-matching.ts';
import {
  CreateUsageLimitBodySchema,
  ListUsageLimitsQuerySchema,
  UpdateUsageLimitBodySchema,
  UsageLimitPolicySchema,
  type UsageLimitPolicy,
} from '../../proxy/budgets/usage-limit-schema.ts';
import type { UsageLimitStore } from '../../proxy/budgets/usage-limit-store.ts';

// GET/POST /v1/policies/usage-limits and GET/PATCH /v1/policies/usage-limits/{id}: budgets,
// beside the rate-limit policies and with the same rules (the spec defines no usage-limit
// route; this mirrors /v1/policies/rate-limits). State-file policies (UsageLimitPolicy
// resources) are listed and read-only. A key sees its workspace's and the global policies;
// changing a global one, or another workspace's, needs org_admin.

export interface UsageLimitSources {
  readonly store: UsageLimitStore;
  readonly statePolicies: () => readonly UsageLimitPolicy[];
}

const ROUTE = '/v1/policies/usage-limits';
const ANY_KEY = { config: { gatewayScope: undefined } };

export function usageLimitRoutes(sources: UsageLimitSources): FastifyPluginAsync {
  return async (app) => {
    const all = async () => [...sources.statePolicies(), ...(await sources.store.list())];

    app.get(ROUTE, ANY_KEY, async (request) => {
      const query = parse(ListUsageLimitsQuerySchema, request.query, 'query');
      const key = apiKeyOf(request);
      const visible = (await all()).filter(
        (policy) =>
          canSee(key, policy) &&
          (query.workspace_id === undefined || policy.workspace_id === query.workspace_id) &&
          policy.status === query.status &&
          (query.type === undefined || policy.type === query.type),
      );
      const pageSize = query.page_size === undefined || query.page_size === 0 ? visible.length : query.page_size;
      const start = query.current_page * pageSize;
      return { object: 'list', data: visible.slice(start, start + pageSize), total: visible.length };
    });

    app.post(ROUTE, ANY_KEY, async (request) => {
      const key = apiKeyOf(request);
      const body = parse(CreateUsageLimitBodySchema, request.body, 'body');
      const workspace = targetWorkspace(key, body);
      requireAdmin(request);
      const created = await sources.store.create({ ...body, workspace_id: workspace, organisation_id: body.organisation_id ?? key.organisation });
      return { id: created.id, object: 'usage_limit_policy' };
    });

    app.get(`${ROUTE}/:id`, ANY_KEY, async (request) => {
      const id = (request.params as { id: string }).id;
      const found = (await all()).find((policy) => policy.id === id);
      if (found === undefined || !canSee(apiKeyOf(request), found)) throw notFound(id);
      return found;
    });

    app.patch(`${ROUTE}/:id`, ANY_KEY, async (request) => {
      const key = requireAdmin(request);
      const id = (request.params as { id: string }).id;
      const patch = parse(UpdateUsageLimitBodySchema, request.body, 'body');
      const fromState = sources.statePolicies().find((policy) => policy.id === id);
      const found = fromState ?? (await sources.store.list()).find((policy) => policy.id === id);
      if (found === undefined || !canSee(key, found)) throw notFound(id);
      if (fromState !== undefined) {
        throw new GatewayError('AIGW_ERR_READ_ONLY', `Policy "${id}" comes from the gateway state (a UsageLimitPolicy resource); change it there.`, { param: 'id' });
      }
      if (!canManage(key, found)) {
        throw new GatewayError('AIGW_ERR_FORBIDDEN', `Policy "${id}" applies to every workspace; changing it needs the "org_admin" scope.`, { param: 'x-gateway-api-key' });
      }
      const merged = UsageLimitPolicySchema.safeParse({ ...found, ...patch });
      if (!merged.success) throw new GatewayError('AIGW_ERR_INVALID_BODY', merged.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
      const updated = await sources.store.update(id, patch);
      if (updated === undefined) throw notFound(id);
      return updated;
    });
  };
}

function notFound(id: string): GatewayError {
  return new GatewayError('AIGW_ERR_NOT_FOUND', `No usage-limit policy with id "${id.slice(0, 200)}".`, { param: 'id' });
}

export function canSee(key: GatewayApiKey, policy: UsageLimitPolicy): boolean {
  return key.scopes.has('org_admin') || policy.workspace_id === undefined || policy.workspace_id === key.workspace;
}

function canManage(key: GatewayApiKey, policy: UsageLimitPolicy): boolean {
  return key.scopes.has('org_admin') || (policy.workspace_id !== undefined && policy.workspace_id === key.workspace);
}

function targetWorkspace(key: GatewayApiKey, body: z.output<typeof CreateUsageLimitBodySchema>): string {
  const problem = neverMatchProblem(body);
  if (problem !== undefined) throw new GatewayError('AIGW_ERR_INVALID_BODY', problem.message, { param: problem.param });
  const named = conditionWorkspace(body);
  const workspace = body.workspace_id ?? named?.value ?? key.workspace;
  if (workspace !== key.workspace && !key.scopes.has('org_admin')) {
    const param = body.workspace_id !== undefined ? 'workspace_id' : `conditions[${named?.index ?? 0}].value`;
    throw new GatewayError('AIGW_ERR_INVALID_BODY', `${param}: a key without the "org_admin" scope may only name its own workspace.`, { param });
  }
  if (key.organisation !== undefined && body.organisation_id !== undefined && body.organisation_id !== key.organisation) {
    throw new GatewayError('AIGW_ERR_INVALID_BODY', 'organisation_id: a key may only name its own organisation.', { param: 'organisation_id' });
  }
  return workspace;
}

function apiKeyOf(request: FastifyRequest): GatewayApiKey {
  const key = request.gateway.apiKey;
  if (key === undefined) throw new GatewayError('AIGW_ERR_MISSING_API_KEY', 'Missing gateway API key.', { param: 'x-gateway-api-key' });
  return key;
}

function requireAdmin(request: FastifyRequest): GatewayApiKey {
  const key = apiKeyOf(request);
  if (!key.scopes.has('admin')) {
    throw new GatewayError('AIGW_ERR_FORBIDDEN', 'Managing usage-limit policies needs a gateway API key with the "admin" scope.', { param: 'x-gateway-api-key' });
  }
  return key;
}

function parse<S extends z.ZodType>(schema: S, input: unknown, where: string): z.output<S> {
  const parsed = schema.safeParse(input ?? {});
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((issue) => {
    const path = issue.path.map((part) => (typeof part === 'number' ? `[${part}]` : `.${String(part)}`)).join('').replace(/^\./, '');
    return { path: path === '' ? where : path, message: issue.message };
  });
  throw new GatewayError('AIGW_ERR_INVALID_BODY', issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), { param: issues[0]?.path ?? null });
}
