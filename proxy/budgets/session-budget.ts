import { randomUUID } from 'node:crypto';
import type { RequestContext } from '../request-context.ts';
import { usageLimitsOf, type BudgetRuntime, type ResolvedRequest } from './budget-admission.ts';
import type { ActualSpend, BudgetAdmission, WorstCase } from './budget-enforcer.ts';

// Budgets for a long-lived session (a realtime WebSocket): it is one request to the gateway
// but many responses to the provider, so it is charged response by response, each the way
// an HTTP request is. One reservation is open at a time, for the next response's worst
// case: taken before the upgrade (a key that cannot cover it gets the 429 budget_exceeded
// on the upgrade), settled to what the response really cost when its usage arrives, and
// replaced by the next one. When the next cannot be reserved the session is over budget
// (the caller closes it with a reason). Settlements and reservations run one after another,
// in the order the responses ended.

export class SessionBudget {
  readonly #runtime: BudgetRuntime;
  readonly #context: RequestContext;
  readonly #resolved: ResolvedRequest;
  readonly #worst: () => WorstCase;
  /** The reservation for the next response; undefined when no policy applied or it was refused. */
  #open: BudgetAdmission | undefined;
  /** Counters of the last reservation: a response that ends after a refusal is still charged to them. */
  #counters: BudgetAdmission['counters'] = [];
  #chain: Promise<void> = Promise.resolve();
  #closed = false;
  #headers: Readonly<Record<string, string>> = {};

  private constructor(runtime: BudgetRuntime, context: RequestContext, resolved: ResolvedRequest, worst: () => WorstCase) {
    this.#runtime = runtime;
    this.#context = context;
    this.#resolved = resolved;
    this.#worst = worst;
  }

  /**
   * Reserves the first response's worst case, or throws the refusal (429 budget_exceeded,
   * 503 when a fail-closed policy's store is down). Undefined when budgets are not wired.
   */
  static async open(runtime: BudgetRuntime, context: RequestContext, resolved: ResolvedRequest, worst: () => WorstCase): Promise<SessionBudget | undefined> {
    if (runtime.budgets === undefined) return undefined;
    const budget = new SessionBudget(runtime, context, resolved, worst);
    await budget.#reserve();
    return budget;
  }

  /**
   * Charges one response's spend and reserves the next response's worst case. Rejects with
   * the refusal when the next cannot be covered (the session is over budget).
   */
  charge(spend: ActualSpend): Promise<void> {
    const step = this.#chain.then(async () => {
      this.#settle(spend);
      if (!this.#closed) await this.#reserve();
    });
    this.#chain = step.catch(() => undefined);
    return step;
  }

  /** The remaining-budget headers of the last reservation (BUDGET_HEADER), as an HTTP answer carries them. */
  get headers(): Readonly<Record<string, string>> {
    return this.#headers;
  }

  /** The session ended: the open reservation is given back. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#chain = this.#chain.then(() => this.#settle({ costUsd: 0, tokens: 0 }));
  }

  #settle(spend: ActualSpend): void {
    const enforcer = this.#runtime.budgets;
    if (enforcer === undefined) return;
    const open = this.#open;
    this.#open = undefined;
    if (open !== undefined) {
      if (!spendless(spend) || open.counters.some((counter) => counter.reserved > 0)) enforcer.settle(open, spend);
      return;
    }
    // Without an open reservation (the next one was refused) a spend is still counted: a
    // fresh token settles nothing reserved and adds the spend.
    if (this.#counters.length > 0 && !spendless(spend)) enforcer.settle({ token: randomUUID(), counters: this.#counters }, spend);
  }

  async #reserve(): Promise<void> {
    const enforcer = this.#runtime.budgets;
    if (enforcer === undefined) return;
    // Policies are read per response: one created through the API applies to open sessions too.
    const policies = usageLimitsOf(this.#runtime, this.#context);
    if (policies.length === 0) return;
    const admitted = await enforcer.admit(policies, this.#resolved.facts, this.#worst);
    if (admitted === undefined) return;
    this.#open = admitted.admission;
    this.#counters = admitted.admission.counters;
    this.#headers = admitted.headers;
  }
}

function spendless(spend: ActualSpend): boolean {
  return (spend.costUsd ?? 0) <= 0 && spend.tokens <= 0;
}
