import type { RequestFacts } from '../ratelimit/policy-matching.ts';
import type { BudgetEnforcer } from './budget-enforcer.ts';
import type { UsageLimitPolicy } from './usage-limit-schema.ts';

// Budgets for MCP tool calls (docs/mcp.md, "Cost"): a priced tool call reserves its price on
// every matching cost usage-limit policy before the upstream is called (the enforcer's 429
// names the policy that cannot cover it), and settles to the price once the upstream answered,
// or to nothing when it did not. Token policies match with 0 tokens: a tool call spends none.

/** Settles a reserved tool call: `answered` charges the price, otherwise the reservation is given back. */
export type SettleToolCall = (answered: boolean) => void;

/**
 * Reserves `costUsd` for one tool call, or throws the enforcer's error (budget exceeded, store
 * down under a fail-closed policy). Undefined when nothing applies; free when no policy exists.
 */
export async function reserveToolCall(
  enforcer: BudgetEnforcer | undefined,
  policies: readonly UsageLimitPolicy[],
  facts: RequestFacts,
  costUsd: number,
): Promise<SettleToolCall | undefined> {
  if (enforcer === undefined || policies.length === 0) return undefined;
  const admitted = await enforcer.admit(policies, [facts], () => ({ costUsd, tokens: 0 }));
  if (admitted === undefined) return undefined;
  let settled = false;
  return (answered) => {
    if (settled) return;
    settled = true;
    enforcer.settle(admitted.admission, { costUsd: answered ? costUsd : 0, tokens: 0 });
  };
}
