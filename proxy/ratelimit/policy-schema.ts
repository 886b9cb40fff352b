import { z } from 'zod';

// The spec's rate-limit policy. One schema for policies in the state file (rendered from
// RateLimitPolicy resources in a cluster) and for those created through the API.

export const POLICY_TYPES = ['requests', 'tokens'] as const;
export const POLICY_UNITS = ['rpm', 'rph', 'rpd'] as const;
export const POLICY_STATUSES = ['active', 'archived'] as const;

/** Keys a condition or group_by may use: the spec's two, plus ours (documented). */
// mcp_server / mcp_tool: MCP tool calls (docs/mcp.md); a policy with one of them counts only those.
export const POLICY_KEY_PATTERN = /^(workspace_id|api_key|provider|model|config|mcp_server|mcp_tool|metadata\.[A-Za-z0-9_.-]{1,64})$/;
const POLICY_KEY_MESSAGE = 'must be workspace_id, api_key, provider, model, config, mcp_server, mcp_tool or metadata.<key>';

/** One condition of a policy (rate limits, attached guardrails): the request's value for a key. */
export const ConditionSchema = z.strictObject({
  key: z.string().regex(POLICY_KEY_PATTERN, POLICY_KEY_MESSAGE).describe('What to match: workspace_id, api_key, provider, model, config, mcp_server, mcp_tool or metadata.<key>.'),
  value: z.string().min(1).describe('The value it must have.'),
});
const GroupBySchema = z.strictObject({ key: z.string().regex(POLICY_KEY_PATTERN, POLICY_KEY_MESSAGE) .describe('Each distinct value of this key gets its own counter (workspace_id, api_key, provider, model, config, mcp_server, mcp_tool or metadata.<key>).')});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const RateLimitPolicySchema = z.strictObject({
  id: z.string().min(1),
  type: z.enum(POLICY_TYPES).describe('requests (count requests) or tokens (count prompt + completion tokens).'),
  unit: z.enum(POLICY_UNITS).describe('Window: rpm (minute), rph (hour) or rpd (day).'),
  value: z.number().positive().describe('Most requests or tokens per window and group.'),
  status: z.enum(POLICY_STATUSES).default('active').describe('active (enforced) or archived (kept, not enforced).'),
  workspace_id: z.string().min(1).optional().describe('Workspace that owns the policy.'),
  organisation_id: z.string().optional().describe('Organisation that owns the policy.'),
  name: z.string().max(255).optional().describe('A name for people.'),
  conditions: z.array(ConditionSchema).min(1).describe('Requests the policy applies to: all conditions must match.'),
  group_by: z.array(GroupBySchema).min(1).describe('Keys whose values each get their own counter (e.g. api_key: a limit per key).'),
  created_at: z.string().optional(),
  last_updated_at: z.string().optional(),
});

export type RateLimitPolicy = z.infer<typeof RateLimitPolicySchema>;

/** POST /v1/policies/rate-limits body (spec). */
export const CreatePolicyBodySchema = z.strictObject({
  conditions: z.array(ConditionSchema).min(1),
  group_by: z.array(GroupBySchema).min(1),
  type: z.enum(POLICY_TYPES),
  unit: z.enum(POLICY_UNITS),
  value: z.number().positive(),
  name: z.string().max(255).optional(),
  workspace_id: z.string().min(1).optional(),
  organisation_id: z.string().regex(UUID, 'must be a UUID').optional(),
});

export type CreatePolicyBody = z.infer<typeof CreatePolicyBodySchema>;

/** GET /v1/policies/rate-limits query (spec). */
export const ListPoliciesQuerySchema = z.strictObject({
  workspace_id: z.string().min(1).optional(),
  status: z.enum(POLICY_STATUSES).default('active'),
  type: z.enum(POLICY_TYPES).optional(),
  unit: z.enum(POLICY_UNITS).optional(),
  page_size: z.coerce.number().int().min(0).optional(),
  current_page: z.coerce.number().int().min(0).default(0),
});

export type ListPoliciesQuery = z.infer<typeof ListPoliciesQuerySchema>;

/** PATCH /v1/policies/rate-limits/{id} body (ours: the spec has no update route). */
export const UpdatePolicyBodySchema = z.strictObject({
  status: z.enum(POLICY_STATUSES).optional(),
  value: z.number().positive().optional(),
  name: z.string().max(255).optional(),
});

export const WINDOW_MS: Readonly<Record<RateLimitPolicy['unit'], number>> = {
  rpm: 60_000,
  rph: 3_600_000,
  rpd: 86_400_000,
};
