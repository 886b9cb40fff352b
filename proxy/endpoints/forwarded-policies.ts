import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors.ts';
import { HEADER } from '../gateway-headers.ts';
import { modelOf, usageOf } from '../ratelimit/usage-tap.ts';
import { reachableTargets, type ReachableTarget } from '../routing/reachable-targets.ts';
import { selectRoute } from '../routing/select-route.ts';
import type { GuardedResponse } from '../upstream/guarded-call.ts';
import {
  attachedGuardrailsOf,
  deniedBody,
  GUARDRAIL_DENIED_STATUS,
  guardrailsOf,
  hookResultsOf,
  logAsync,
  mergeGuardrails,
  runInput,
  runOptionsOf,
  verdictOf,
  type GuardrailRuntime,
} from './guardrail-flow.ts';
import { rateLimitAdmission, lazyResolution, tokenEstimate, type PolicyRuntime } from './policy-admission.ts';
import { budgetAdmission, type BudgetRuntime } from '../budgets/budget-admission.ts';

// The forwarded OpenAI routes (images, audio, assistants, vector stores…) spend a provider's
// credentials like inference does, so the same policies hold on them
// (docs/security.md, "Policies apply to what a request resolves to"):
// - rate limits: request policies count every call, token policies reserve an estimate and
//   settle to the answer's `usage` where it has one (0 otherwise);
// - guardrails (the config's and those attached to the provider, key or workspace): input
//   checks run over a JSON body's text (every string in it but `model`); a body that is not
//   JSON cannot be checked and is refused (415) when input checks apply; an output check that
//   can deny cannot run on an answer streamed through, so such a request is refused (400);
// - cost: the answer's `usage` (plain JSON answers) is read on its way through, priced by the
//   request's model like any other request;
// - budgets: usage-limit policies reserve the worst case of a priced model and settle to the
//   priced usage (docs/budgets.md).

export interface ForwardedPolicyDeps {
  readonly policies: PolicyRuntime & BudgetRuntime;
  readonly guardrails: GuardrailRuntime;
}

/** What the route forwards after the policies: the body (rewritten by a mutator, or as received), or a 446 already sent. */
export type PolicyOutcome = { readonly denied: FastifyReply } | { readonly denied?: undefined; readonly body: Buffer | undefined };

/** Largest tail of a JSON answer kept to find its `usage` (it comes last in OpenAI answers). */
const USAGE_TAIL_BYTES = 64 * 1024;

export async function applyForwardedPolicies(
  deps: ForwardedPolicyDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  route: string,
): Promise<PolicyOutcome> {
  const context = request.gateway;
  const state = context.state;
  const json = request.rawBody === undefined ? undefined : asObject(request.body);
  const model = typeof json?.['model'] === 'string' ? json['model'] : undefined;
  if (model !== undefined) context.model = model;
  // The same selection forwardingTarget made (provider-forwarding.ts).
  const selection = selectRoute(request.headers, state, { apiKey: context.apiKey, model: undefined });
  const resolved = lazyResolution(() => withSentModel(reachableTargets(selection.plan, state, { body: json, metadata: context.metadata, pathname: route }), model), context);
  const limited = rateLimitAdmission(deps.policies, context, resolved, () =>
    // Reads and deletes generate nothing: they reserve a token, not a default answer.
    tokenEstimate(json, request.rawBody?.length ?? contentLength(request), request.method === 'POST'),
  );
  if (limited !== undefined) await limited;
  // Budgets: a priced model's worst case is reserved; unpriced routes reserve nothing and settle to their priced usage, if any.
  const budgeted = budgetAdmission(deps.policies, context, reply, resolved, () => ({
    body: json,
    bodyBytes: request.rawBody?.length ?? contentLength(request),
    generates: request.method === 'POST',
  }));
  if (budgeted !== undefined) await budgeted;

  const guards = mergeGuardrails(guardrailsOf(selection.plan.settings, state), attachedGuardrailsOf(state, resolved));
  if (guards.empty) return { body: request.rawBody };
  if (guards.afterDenies) {
    throw new GatewayError(
      'AIGW_ERR_UNSUPPORTED_ENDPOINT',
      `${route} is forwarded as the provider answers it, and guardrails that can refuse an answer apply to this request: it is refused rather than sent unchecked.`,
      { param: HEADER.config },
    );
  }
  if (guards.before.length === 0) return { body: request.rawBody };
  if (json === undefined) {
    if (request.method !== 'POST' || request.headers['content-type'] === undefined) return { body: request.rawBody };
    throw new GatewayError(
      'AIGW_ERR_UNSUPPORTED_MEDIA_TYPE',
      `Input guardrails apply to this request and a ${String(request.headers['content-type']).split(';')[0]} body cannot be checked; send a JSON body or use a provider without input guardrails.`,
      { param: 'content-type' },
    );
  }
  // The checks see the body's strings as one completions prompt; a rewrite maps back in order.
  const strings = stringsOf(json);
  const hookBody = { model, prompt: strings };
  const span = context.span?.startChild('aigateway.guardrails.input');
  const outcome = await runInput(guards, { endpoint: 'completions', requestBody: hookBody, metadata: context.metadata, model }, runOptionsOf(deps.guardrails));
  span?.end({ 'aigateway.guardrail.verdict': outcome === undefined ? undefined : verdictOf(outcome, undefined) });
  logAsync(outcome, deps.guardrails.logger, context.traceId);
  if (outcome === undefined) return { body: request.rawBody };
  context.guardrailVerdict = verdictOf(outcome, undefined);
  if (outcome.denied) {
    const denied = reply
      .code(GUARDRAIL_DENIED_STATUS)
      .header('content-type', 'application/json; charset=utf-8')
      .send(deniedBody('input', hookResultsOf(outcome, undefined)));
    return { denied };
  }
  const rewritten = outcome.requestBody?.['prompt'];
  if (!Array.isArray(rewritten) || rewritten.length !== strings.length) return { body: request.rawBody };
  return { body: Buffer.from(JSON.stringify(replaceStrings(json, rewritten as unknown[]))) };
}

/** Reads the answer's `usage` (and model) on its way to the client, for cost and token limits. */
export function meterForwardedAnswer(request: FastifyRequest, answer: GuardedResponse): GuardedResponse {
  const type = answer.headers['content-type'];
  if (answer.statusCode < 200 || answer.statusCode >= 300 || typeof type !== 'string' || !type.includes('json')) return answer;
  const context = request.gateway;
  const tail = new UsageTail((payload) => {
    const usage = usageOf(payload);
    if (usage !== undefined) context.usage = usage;
    const model = modelOf(payload);
    if (model !== undefined) context.responseModel = model;
  });
  const body = answer.body as unknown as Readable;
  body.on('error', (error) => tail.destroy(error));
  return { ...answer, body: body.pipe(tail) as unknown as GuardedResponse['body'] };
}

/** Passes bytes through; keeps the last USAGE_TAIL_BYTES and reads `"usage": {…}` from them at the end. */
class UsageTail extends Transform {
  readonly #report: (payload: Record<string, unknown>) => void;
  #tail = '';

  constructor(report: (payload: Record<string, unknown>) => void) {
    super();
    this.#report = report;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    const text = this.#tail + chunk.toString('latin1');
    this.#tail = text.length > USAGE_TAIL_BYTES ? text.slice(-USAGE_TAIL_BYTES) : text;
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    try {
      const payload = usageBlockOf(Buffer.from(this.#tail, 'latin1').toString('utf8'));
      if (payload !== undefined) this.#report(payload);
    } catch {
      // An answer whose usage cannot be read is relayed all the same, unmetered.
    }
    callback();
  }
}

/** `{ usage, model }` from the last `"usage": {…}` object of a JSON text's tail. */
export function usageBlockOf(text: string): Record<string, unknown> | undefined {
  const at = text.lastIndexOf('"usage"');
  if (at === -1) return undefined;
  const open = text.indexOf('{', at);
  if (open === -1 || text.slice(at + 7, open).trim() !== ':') return undefined;
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) {
      const usage: unknown = JSON.parse(text.slice(open, i + 1));
      const model = /"model"\s*:\s*"([^"\\]{1,256})"/.exec(text)?.[1];
      return { usage, model };
    }
  }
  return undefined;
}

function asObject(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function contentLength(request: FastifyRequest): number {
  const length = request.headers['content-length'];
  return typeof length === 'string' && /^\d{1,15}$/.test(length) ? Number(length) : 0;
}

/** The forwarded body goes as sent (override_params are not applied): its own model counts too. */
function withSentModel(targets: ReachableTarget[], model: string | undefined): ReachableTarget[] {
  const extra = targets.filter((target) => target.model !== model).map((target) => ({ ...target, model }));
  return extra.length === 0 ? targets : [...targets, ...extra];
}

/** Every string of a JSON value in document order, but the top-level `model`. */
function stringsOf(body: Record<string, unknown>): string[] {
  const strings: string[] = [];
  const visit = (value: unknown): void => {
    if (typeof value === 'string') strings.push(value);
    else if (Array.isArray(value)) value.forEach(visit);
    else if (typeof value === 'object' && value !== null) for (const item of Object.values(value)) visit(item);
  };
  for (const [key, value] of Object.entries(body)) if (key !== 'model') visit(value);
  return strings;
}

/** The body with its strings (in stringsOf's order) replaced by `replacements`. */
function replaceStrings(body: Record<string, unknown>, replacements: readonly unknown[]): Record<string, unknown> {
  let index = 0;
  const visit = (value: unknown): unknown => {
    if (typeof value === 'string') {
      const next = replacements[index++];
      return typeof next === 'string' ? next : value;
    }
    if (Array.isArray(value)) return value.map(visit);
    if (typeof value === 'object' && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, visit(item)]));
    return value;
  };
  return Object.fromEntries(Object.entries(body).map(([key, value]) => [key, key === 'model' ? value : visit(value)]));
}
