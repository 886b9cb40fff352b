import type { GatewayState } from '../config/gateway-state.ts';
import type { RequestContext } from '../request-context.ts';
import { PriceTable } from './price-table.ts';
import { saneCost } from './token-count.ts';

// The cost of one finished request, from its context: whichever route set the provider,
// model and usage (chat, completions, responses, messages…) is priced the same way.

const tables = new WeakMap<GatewayState, PriceTable>();

/** The snapshot's price table: the built-in one behind the state file's modelPrices. */
export function priceTableOf(state: GatewayState): PriceTable {
  let table = tables.get(state);
  if (table === undefined) {
    table = new PriceTable(state.document.modelPrices ?? []);
    tables.set(state, table);
  }
  return table;
}

/** USD; 0 for an answer served from the gateway's cache; undefined when unpriced, no usage, or not a finite non-negative amount. */
export function costOfRequest(context: RequestContext): number | undefined {
  return saneCost(pricedCost(context));
}

function pricedCost(context: RequestContext): number | undefined {
  // Served from the gateway's cache: the provider was not called.
  if (context.cacheStatus !== undefined && context.cacheStatus.endsWith('HIT')) return 0;
  const usage = context.usage;
  if (usage === undefined) return undefined;
  const table = priceTableOf(context.state);
  const at = context.startedAtMs;
  if (context.responseModel !== undefined && context.responseModel !== context.model) {
    const priced = table.costUsd(context.provider, context.responseModel, usage, at);
    if (priced !== undefined) return priced;
  }
  return table.costUsd(context.provider, context.model, usage, at);
}

/**
 * A stream the client left before the provider reported usage is charged an estimate:
 * about 4 bytes of request JSON per prompt token, one token per content event relayed.
 */
export function estimateUsage(context: RequestContext): void {
  if (context.usage !== undefined || context.upstreamStartedAt === undefined) return;
  const prompt = Math.ceil(context.requestBytes / 4);
  const completion = context.streamEvents;
  context.usage = { prompt, completion, total: prompt + completion };
  context.usageEstimated = true;
}
