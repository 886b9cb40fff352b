import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { RequestFacts } from '../ratelimit/policy-matching.ts';
import type { RequestContext } from '../request-context.ts';
import type { Dispatcher } from 'undici';
import { priceTableOf } from '../accounting/request-cost.ts';
import type { TokenUsage } from '../accounting/price-table.ts';
import { usageLimitsOf, type BudgetRuntime } from '../budgets/budget-admission.ts';
import { counterKey, groupOf, usageLimitApplies, type BudgetCounter } from '../budgets/budget-enforcer.ts';
import { periodOf } from '../budgets/budget-period.ts';
import type { BudgetStore } from '../budgets/budget-store.ts';
import type { ResolvedTarget } from '../providers/provider-adapter.ts';
import { callProvider } from './provider-forwarding.ts';
import { tokenCount } from '../accounting/token-count.ts';

// Provider-forwarded batches (completion_window "24h") charged by their results. The
// provider runs the lines, so nothing is reserved up front; when a retrieve through the
// gateway finds the batch finished with an output file, one replica (a claim in the budget
// store, atomic in Redis) downloads the file, sums each successful line's usage per model,
// prices it (the price table has no batch rates: standard rates, so a budget errs high) and
// settles it on every usage-limit policy matching the line's model and the call that CREATED
// the batch (recorded at creation), never the retrieving one: one tenant's retrieve must not
// spend another's budget. A batch with no creator record (created before the record existed,
// or directly at the provider) is charged to the retrieving call, as before.

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
/** How long a batch's creator is kept: as long as a provider keeps batch output files (OpenAI: 30 days). */
const CREATOR_TTL_SECONDS = 30 * 86_400;
/** A creator record above this is kept without its metadata (headers cap metadata well below it). */
const MAX_CREATOR_BYTES = 64 * 1024;

/** The facts of the call that created a forwarded batch, on which its budgets are matched. */
export type BatchCreator = Pick<RequestFacts, 'workspace_id' | 'api_key' | 'config' | 'metadata'>;

export interface ForwardedBatchChargeDeps {
  readonly runtime: BudgetRuntime;
  readonly dispatcher: Dispatcher;
  readonly now: () => number;
}

/** Whether a retrieve of a forwarded batch must be read (not streamed) to charge it: a usage-limit policy exists. */
export function chargesForwardedBatches(runtime: BudgetRuntime | undefined, request: FastifyRequest): runtime is BudgetRuntime {
  return runtime?.budgets !== undefined && usageLimitsOf(runtime, request.gateway).length > 0;
}

function creatorKey(provider: string, id: string): string {
  return `{budget}#forwarded-batch-creator:${provider}:${id.slice(0, 256)}`;
}

/** The budget facts of a call (the line's provider and model are added per line). */
export function creatorOf(context: RequestContext): BatchCreator {
  return { workspace_id: context.apiKey?.workspace, api_key: context.apiKey?.id, config: context.configId, metadata: context.metadata };
}

/**
 * Records who created a forwarded batch (its id from the provider's answer), so its results
 * are charged to the creator's budgets. Never fails the create: a store outage is logged and
 * the batch is then charged to whoever retrieves it.
 */
export async function recordBatchCreator(store: BudgetStore, request: FastifyRequest, target: ResolvedTarget, batch: Record<string, unknown>): Promise<void> {
  const id = batch['id'];
  if (typeof id !== 'string' || id.length === 0) return;
  const creator = creatorOf(request.gateway);
  let value = JSON.stringify(creator);
  if (Buffer.byteLength(value) > MAX_CREATOR_BYTES) value = JSON.stringify({ ...creator, metadata: undefined });
  try {
    await store.remember(creatorKey(target.provider, id), value, CREATOR_TTL_SECONDS);
  } catch (error) {
    request.log.warn({ batch: id.slice(0, 256), err: { message: (error as Error).message } }, 'could not record the creator of a forwarded batch; it will be charged to whoever retrieves it');
  }
}

/** The recorded creator; undefined when there is none; throws when the store cannot say. */
async function recalledCreator(store: BudgetStore, provider: string, id: string): Promise<BatchCreator | undefined> {
  const text = await store.recall(creatorKey(provider, id));
  if (text === undefined) return undefined;
  const parsed = record(JSON.parse(text));
  if (parsed === undefined) throw new Error('unreadable creator record');
  return { workspace_id: string(parsed['workspace_id']), api_key: string(parsed['api_key']), config: string(parsed['config']), metadata: record(parsed['metadata']) };
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
  let creator: BatchCreator | undefined;
  try {
    creator = await recalledCreator(store, target.provider, id);
  } catch {
    return; // store down: the next retrieve tries again
  }
  // The creator pays; the retriever only when nobody recorded a creator.
  const payer = creator ?? creatorOf(context);
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
    const facts: RequestFacts[] = [{ ...payer, provider: target.provider, model }];
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
  const prompt = tokenCount(usage['prompt_tokens']) ?? tokenCount(usage['input_tokens']) ?? 0;
  const completion = tokenCount(usage['completion_tokens']) ?? tokenCount(usage['output_tokens']) ?? 0;
  const cached = tokenCount(record(usage['prompt_tokens_details'])?.['cached_tokens']) ?? tokenCount(record(usage['input_tokens_details'])?.['cached_tokens']) ?? 0;
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

function string(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}
