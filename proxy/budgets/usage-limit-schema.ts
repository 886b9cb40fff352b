import { z } from 'zod';
import { ConditionSchema, POLICY_KEY_PATTERN, POLICY_STATUSES } from '../ratelimit/policy-schema.ts';

// Usage-limit policies (budgets): the rate-limit policies' `conditions` / `group_by` shape,
// a credit limit in USD (`type: cost`) or tokens (`type: tokens`) per period and group.
// One schema for the state file (UsageLimitPolicy resources in a cluster) and the API.

export const USAGE_LIMIT_TYPES = ['cost', 'tokens'] as const;
export const RESET_PERIODS = ['daily', 'weekly', 'monthly', 'never'] as const;

const GroupBySchema = z.strictObject({
  key: z
    .string()
    .regex(POLICY_KEY_PATTERN, 'must be workspace_id, api_key, provider, model, config or metadata.<key>')
    .describe('Each distinct value of this key gets its own budget (workspace_id, api_key, provider, model, config or metadata.<key>).'),
});

/** An IANA time zone Intl knows (periods start at local midnight there). */
const TimeZoneSchema = z.string().min(1).max(64).refine(isTimeZone, 'must be an IANA time zone, e.g. UTC or Europe/Berlin');

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const Amount = z.number().positive().finite().max(1e12);
/** The alert webhook: https (or http for loopback tests) only; it is called through the egress guard. */
const WebhookSchema = z.url({ protocol: /^https?$/ }).max(2048);

const PolicyFields = {
  type: z.enum(USAGE_LIMIT_TYPES).describe('cost (USD, from the price table) or tokens (prompt + completion).'),
  credit_limit: Amount.describe('Most USD or tokens per period and group.'),
  alert_threshold: Amount.optional().describe('Spend (same unit) at which an alert is sent once per period and group.'),
  periodic_reset: z.enum(RESET_PERIODS).default('never').describe('daily, weekly (Monday), monthly (1st) or never.'),
  time_zone: TimeZoneSchema.default('UTC').describe('Where the calendar periods start at midnight.'),
  max_reservation: Amount.optional().describe('Most one request may reserve before it runs (USD or tokens).'),
  fail_open: z.boolean().default(true).describe('When the budget store is unreachable: admit (true) or refuse with 503 (false).'),
  alert_webhook: WebhookSchema.optional().describe('POSTed a JSON alert when alert_threshold is crossed.'),
  name: z.string().max(255).optional().describe('A name for people.'),
  workspace_id: z.string().min(1).optional().describe('Workspace that owns the policy.'),
  organisation_id: z.string().optional().describe('Organisation that owns the policy.'),
  conditions: z.array(ConditionSchema).min(1).describe('Requests the policy applies to: all conditions must match.'),
  group_by: z.array(GroupBySchema).min(1).describe('Keys whose values each get their own budget (e.g. api_key: a budget per key).'),
};

/** The policy's fields without the cross-field check (custom resources derive their spec from it). */
export const UsageLimitPolicyObjectSchema = z.strictObject({
  id: z.string().min(1).max(128),
  status: z.enum(POLICY_STATUSES).default('active').describe('active (enforced) or archived (kept, not enforced).'),
  ...PolicyFields,
  created_at: z.string().optional(),
  last_updated_at: z.string().optional(),
});

export const UsageLimitPolicySchema = UsageLimitPolicyObjectSchema.refine((policy) => policy.alert_threshold === undefined || policy.alert_threshold <= policy.credit_limit, {
    message: 'alert_threshold must not exceed credit_limit',
    path: ['alert_threshold'],
  });

export type UsageLimitPolicy = z.infer<typeof UsageLimitPolicySchema>;

/** POST /v1/policies/usage-limits body. */
export const CreateUsageLimitBodySchema = z
  .strictObject(PolicyFields)
  .refine((policy) => policy.alert_threshold === undefined || policy.alert_threshold <= policy.credit_limit, {
    message: 'alert_threshold must not exceed credit_limit',
    path: ['alert_threshold'],
  });

export type CreateUsageLimitBody = z.infer<typeof CreateUsageLimitBodySchema>;

/** PATCH /v1/policies/usage-limits/{id} body. */
export const UpdateUsageLimitBodySchema = z.strictObject({
  status: z.enum(POLICY_STATUSES).optional(),
  credit_limit: Amount.optional(),
  alert_threshold: Amount.optional(),
  max_reservation: Amount.optional(),
  fail_open: z.boolean().optional(),
  name: z.string().max(255).optional(),
});

export const ListUsageLimitsQuerySchema = z.strictObject({
  workspace_id: z.string().min(1).optional(),
  status: z.enum(POLICY_STATUSES).default('active'),
  type: z.enum(USAGE_LIMIT_TYPES).optional(),
  page_size: z.coerce.number().int().min(0).optional(),
  current_page: z.coerce.number().int().min(0).default(0),
});
