import { priceTableOf } from '../accounting/request-cost.ts';
import type { RequestContext } from '../request-context.ts';

/**
 * Settles a request's budget reservations once, at its end (request-finish.ts), after its
 * cost is known: the provider's usage priced, 0 for a cache hit or a failed call (a refund).
 * A client that left mid-stream is charged what it consumed: the prompt plus at least one
 * token per content event it was sent, even when the provider's partial usage said less.
 */
export function settleBudgetOf(context: RequestContext): void {
  const settle = context.settleBudget;
  if (settle === undefined) return;
  context.settleBudget = undefined;
  let usage = context.usage;
  let costUsd = context.costUsd;
  if (context.clientAborted && usage !== undefined && (usage.completion ?? 0) < context.streamEvents) {
    usage = { ...usage, completion: context.streamEvents, total: (usage.prompt ?? 0) + context.streamEvents };
    const model = context.responseModel ?? context.model;
    const priced = model === undefined ? undefined : priceTableOf(context.state).costUsd(context.provider, model, usage, context.startedAtMs);
    if (priced !== undefined && Number.isFinite(priced) && priced >= 0) costUsd = Math.max(costUsd ?? 0, priced);
  }
  const total = usage === undefined ? 0 : (usage.total ?? (usage.prompt ?? 0) + (usage.completion ?? 0));
  settle({ costUsd, tokens: total > 0 ? total : 0 });
}
