import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { GatewayApiKey } from '../../proxy/config/gateway-state.ts';
import { GatewayError } from '../../proxy/errors.ts';
import {
  CreatePolicyBodySchema,
  ListPoliciesQuerySchema,
  UpdatePolicyBodySchema,
  type RateLimitPolicy,
} from '../../proxy/ratelimit/policy-schema.ts';
import { conditionWorkspace, neverMatchProblem } from '../../proxy/ratelimit/policy-matching.ts';
import type { PolicyStore } from '../../proxy/ratelimit/policy-store.ts';

// GET/POST /v1/policies/rate-limits (spec), plus GET and PATCH /v1/policies/rate-limits/{id}
// (ours: the spec's policies have status active|archived but no route to change it).
// Policies from the state file (RateLimitPolicy resources in a cluster) are listed with
// the API-created ones, and are read-only here.
//
// Workspaces are a tenancy boundary: a key sees and manages its own workspace's policies
// (and sees the global ones); only the org_admin scope reaches other workspaces. `admin`
// is admin of the key's own workspace. Another workspace's policy answers 404, like a
// missing one.

export interface PolicySources {
  /** API-created policies: the local file standalone, RateLimitPolicy resources in a cluster. */
  readonly store: PolicyStore;
  /** Policies of the served state file. */
  readonly statePolicies: () => readonly RateLimitPolicy[];
}

const ROUTE = '/v1/policies/rate-limits';
const ANY_KEY = { config: { gatewayScope: undefined } };

export function policyRoutes(sources: PolicySources): FastifyPluginAsync {
  return async (app) => {
    app.get(ROUTE, ANY_KEY, async (request) => {
      const query = parse(ListPoliciesQuerySchema, request.query, 'query');
      const key = apiKeyOf(request);
      const all = [...sources.statePolicies(), ...(await sources.store.list())];
      const visible = all.filter(
        (policy) =>
          canSee(key, policy) &&
          (query.workspace_id === undefined || policy.workspace_id === query.workspace_id) &&
          policy.status === query.status &&
          (query.type === undefined || policy.type === query.type) &&
          (query.unit === undefined || policy.unit === query.unit),
      );
      const pageSize = query.page_size === undefined || query.page_size === 0 ? visible.length : query.page_size;
      const start = query.current_page * pageSize;
      return { object: 'list', data: visible.slice(start, start + pageSize), total: visible.length };
    });

    app.post(ROUTE, ANY_KEY, async (request) => {
      const key = apiKeyOf(request);
      const body = parse(CreatePolicyBodySchema, request.body, 'body');
      // The body is checked before the scope, so a key learns why the policy is wrong
      // (the field) even when it may not create it; neither answer reveals other workspaces.
      const workspace = targetWorkspace(key, body);
      requireAdmin(request);
      const created = await sources.store.create({
        ...body,
        workspace_id: workspace,
        organisation_id: body.organisation_id ?? key.organisation,
      });
      return { id: created.id, object: 'rate_limit_policy' };
    });

    app.get(`${ROUTE}/:id`, ANY_KEY, async (request) => {
      const id = (request.params as { id: string }).id;
      const key = apiKeyOf(request);
      const found = [...sources.statePolicies(), ...(await sources.store.list())].find((policy) => policy.id === id);
      // Another workspace's policy answers exactly like a missing one.
      if (found === undefined || !canSee(key, found)) {
        throw new GatewayError('AIGW_ERR_NOT_FOUND', `No rate-limit policy with id "${id}".`, { param: 'id' });
      }
      return found;
    });

    app.patch(`${ROUTE}/:id`, ANY_KEY, async (request) => {
      const key = requireAdmin(request);
      const id = (request.params as { id: string }).id;
      const patch = parse(UpdatePolicyBodySchema, request.body, 'body');
      const fromState = sources.statePolicies().find((policy) => policy.id === id);
      const found = fromState ?? (await sources.store.list()).find((policy) => policy.id === id);
      if (found === undefined || !canSee(key, found)) throw new GatewayError('AIGW_ERR_NOT_FOUND', `No rate-limit policy with id "${id}".`, { param: 'id' });
      if (fromState !== undefined) {
        throw new GatewayError('AIGW_ERR_READ_ONLY', `Policy "${id}" comes from the gateway state (a RateLimitPolicy resource); change it there.`, {
          param: 'id',
        });
      }
      // A global policy limits every workspace: only an organisation-wide key may change it.
      if (!canManage(key, found)) {
        throw new GatewayError('AIGW_ERR_FORBIDDEN', `Policy "${id}" applies to every workspace; changing it needs the "org_admin" scope.`, {
          param: 'x-gateway-api-key',
        });
      }
      const updated = await sources.store.update(id, patch);
      if (updated === undefined) throw new GatewayError('AIGW_ERR_NOT_FOUND', `No rate-limit policy with id "${id}".`, { param: 'id' });
      return updated;
    });
  };
}

/** A key sees its workspace's policies and the global ones; the org_admin scope sees all. */
function canSee(key: GatewayApiKey, policy: RateLimitPolicy): boolean {
  return key.scopes.has('org_admin') || policy.workspace_id === undefined || policy.workspace_id === key.workspace;
}

/** An admin key changes its own workspace's policies; the org_admin scope any. */
function canManage(key: GatewayApiKey, policy: RateLimitPolicy): boolean {
  return key.scopes.has('org_admin') || (policy.workspace_id !== undefined && policy.workspace_id === key.workspace);
}

/**
 * The workspace a new policy belongs to: `workspace_id`, else the one its conditions name,
 * else the key's. Filing it anywhere else would make it a policy that never applies.
 * Another workspace needs the org_admin scope.
 */
function targetWorkspace(key: GatewayApiKey, body: z.output<typeof CreatePolicyBodySchema>): string {
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
    throw new GatewayError('AIGW_ERR_FORBIDDEN', 'Managing rate-limit policies needs a gateway API key with the "admin" scope.', {
      param: 'x-gateway-api-key',
    });
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
  throw new GatewayError('AIGW_ERR_INVALID_BODY', issues.map((issue) => `${issue.path}: ${issue.message}`).join('; '), {
    param: issues[0]?.path ?? null,
  });
}
