import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { priceTableOf } from '../accounting/request-cost.ts';
import type { TokenUsage } from '../accounting/price-table.ts';
import { usageLimitsOf, type BudgetRuntime } from '../budgets/budget-admission.ts';
import { counterKey, groupOf, usageLimitApplies, type BudgetCounter } from '../budgets/budget-enforcer.ts';
import { periodOf } from '../budgets/budget-period.ts';
import { factsOf } from '../endpoints/policy-admission.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { callProvider } from './provider-forwarding.ts';

// Provider-forwarded batches (completion_window "24h") charged by their results. The
// provider runs the lines, so nothing is reserved up front; when a retrieve through the
// gateway finds the batch finished with an output file, one replica (a claim in the budget
// store, atomic in Redis) downloads the file, sums each successful line's usage per model,
// prices it (the price table has no batch rates: standard rates, so a budget errs high) and
// settles it on every usage-limit policy matching the retrieving call and the line's model.

/** Batch states whose output file holds every result there will be. */
const FINISHED = new Set(['completed', 'expired', 'cancelled']);
/** Largest output file read (OpenAI's batch input limit is 200 MB; answers are larger). */
const MAX_OUTPUT_BYTES = 1024 * 1024 * 1024;
/** A longer line is skipped (counted as unpriced), never buffered whole. */
const MAX_LINE_BYTES = 16 * 1024 * 1024;
/** Distinct models summed per batch (one batch names one endpoint, usually one model). */
const MAX_MODELS = 64;
/** How long a batch stays claimed: longer than any period a provider keeps its files. */
const CLAIM_TTL_SECONDS = 60 * 86_400;

export interface ForwardedBatchChargeDeps {
  readonly runtime: BudgetRuntime;
  readonly dispatcher: Dispatcher;
  readonly now: () => number;
}

/** Whether a retrieve of a forwarded batch must be read (not streamed) to charge it: a usage-limit policy exists. */
export function chargesForwardedBatches(runtime: BudgetRuntime | undefined, request: FastifyRequest): runtime is BudgetRuntime {
  return runtime?.budgets !== undefined && usageLimitsOf(runtime, request.gateway).length > 0;
}

/** Usage summed per model over the successful lines of an output file. */
export interface BatchResultUsage {
  readonly byModel: Map<string, { prompt: number; completion: number; cachedPrompt: number; lines: number }>;
  readonly lines: number;
  /** Lines with no usage or beyond the caps. */
  readonly skipped: number;
}

/**
 * Charges a finished forwarded batch once (the first retrieve that sees it finished, across
 * replicas with Redis); never fails or delays the retrieve. Resolves when done (tests wait on it).
 */
export async function chargeForwardedBatch(deps: ForwardedBatchChargeDeps, request: FastifyRequest, target: ResolvedTarget, batch: Record<string, unknown>): Promise<void> {
  const enforcer = deps.runtime.budgets;
  const outputFileId = batch['output_file_id'];
  const id = batch['id'];
  if (enforcer === undefined || typeof id !== 'string' || typeof outputFileId !== 'string' || !FINISHED.has(String(batch['status']))) return;
  const context = request.gateway;
  const policies = usageLimitsOf(deps.runtime, context);
  if (policies.length === 0) return;
  const store = enforcer.store;
  const claim = `{budget}#forwarded-batch:${target.provider}:${id.slice(0, 256)}`;
  const token = randomUUID();
  let claimed;
  try {
    claimed = await store.reserve([{ key: claim, limit: 1, amount: 1, ttlSeconds: CLAIM_TTL_SECONDS }], token);
  } catch {
    return; // store down: the next retrieve tries again
  }
  if (!claimed.admitted) return; // charged already (or being charged by another replica)
  let usage: BatchResultUsage;
  try {
    const answer = await callProvider(deps.dispatcher, target, { method: 'GET', path: `files/${encodeURIComponent(outputFileId)}/content` });
    if (answer.statusCode < 200 || answer.statusCode >= 300) {
      await answer.body.dump().catch(() => undefined);
      throw new Error(`output file answered ${answer.statusCode}`);
    }
    usage = await sumBatchResultUsage(answer.body as AsyncIterable<Buffer>);
  } catch {
    // Not charged: release the claim so a later retrieve tries again.
    await store.cancel([claim], token).catch(() => undefined);
    return;
  }
  const table = priceTableOf(context.state);
  const at = deps.now();
  for (const [model, sum] of usage.byModel) {
    const facts = factsOf(context, [{ provider: target.provider, slug: undefined, model }]);
    const counters: BudgetCounter[] = [];
    const seen = new Set<string>();
    for (const policy of policies) {
      for (const fact of facts) {
        if (!usageLimitApplies(policy, fact)) continue;
        const period = periodOf(policy, at);
        const group = groupOf(policy, fact);
        const key = counterKey(policy, period, group);
        if (seen.has(key)) continue;
        seen.add(key);
        counters.push({ policy, key, group, period, reserved: 0 });
      }
    }
    if (counters.length === 0) continue;
    const tokenUsage: TokenUsage = { prompt: sum.prompt, completion: sum.completion, cachedPrompt: sum.cachedPrompt };
    const costUsd = table.costUsd(target.provider, model, tokenUsage, at);
    // No reservation under this token: settlement adds the spend (and alerts, metrics) only.
    enforcer.settle({ token: randomUUID(), counters }, { costUsd: costUsd !== undefined && Number.isFinite(costUsd) ? costUsd : undefined, tokens: sum.prompt + sum.completion });
  }
}

/** Streams an output file (JSONL), summing the usage of each line whose response succeeded. */
export async function sumBatchResultUsage(body: AsyncIterable<Buffer | string>): Promise<BatchResultUsage> {
  const byModel: BatchResultUsage['byModel'] = new Map();
  let lines = 0;
  let skipped = 0;
  let total = 0;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let overlong = false;
  const take = (line: Buffer): void => {
    if (line.length === 0 || (line.length === 1 && line[0] === 0x0d)) return;
    lines += 1;
    if (!addLine(byModel, line)) skipped += 1;
  };
  for await (const raw of body) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw) : raw;
    total += chunk.length;
    if (total > MAX_OUTPUT_BYTES) throw new Error('batch output file exceeds the charging cap');
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline >= 0; newline = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, newline);
      if (overlong || pendingBytes + piece.length > MAX_LINE_BYTES) {
        lines += 1;
        skipped += 1;
      } else {
        take(pendingBytes === 0 ? piece : Buffer.concat([...pending, piece]));
      }
      pending = [];
      pendingBytes = 0;
      overlong = false;
      start = newline + 1;
    }
    const rest = chunk.subarray(start);
    if (rest.length > 0 && !overlong) {
      if (pendingBytes + rest.length > MAX_LINE_BYTES) {
        overlong = true;
        pending = [];
        pendingBytes = 0;
      } else {
        pending.push(Buffer.from(rest));
        pendingBytes += rest.length;
      }
    }
  }
  if (overlong) {
    lines += 1;
    skipped += 1;
  } else if (pendingBytes > 0) {
    take(Buffer.concat(pending));
  }
  return { byModel, lines, skipped };
}

/** Adds one result line's usage; false when it has none to add. */
function addLine(byModel: BatchResultUsage['byModel'], line: Buffer): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line.toString('utf8'));
  } catch {
    return false;
  }
  const response = record(record(parsed)?.['response']);
  const status = response?.['status_code'];
  if (typeof status !== 'number' || status < 200 || status >= 300) return false;
  const body = record(response?.['body']);
  const model = body?.['model'];
  const usage = record(body?.['usage']);
  if (typeof model !== 'string' || model.length === 0 || model.length > 256 || usage === undefined) return false;
  // Chat and completions (prompt/completion_tokens), Responses (input/output_tokens), embeddings (prompt only).
  const prompt = count(usage['prompt_tokens']) ?? count(usage['input_tokens']) ?? 0;
  const completion = count(usage['completion_tokens']) ?? count(usage['output_tokens']) ?? 0;
  const cached = count(record(usage['prompt_tokens_details'])?.['cached_tokens']) ?? count(record(usage['input_tokens_details'])?.['cached_tokens']) ?? 0;
  if (prompt + completion === 0) return false;
  let sum = byModel.get(model);
  if (sum === undefined) {
    if (byModel.size >= MAX_MODELS) return false;
    sum = { prompt: 0, completion: 0, cachedPrompt: 0, lines: 0 };
    byModel.set(model, sum);
  }
  sum.prompt += prompt;
  sum.completion += completion;
  sum.cachedPrompt += Math.min(cached, prompt);
  sum.lines += 1;
  return true;
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** A token count a provider may report: a non-negative safe integer, else ignored. */
function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= 1e10 ? value : undefined;
}
