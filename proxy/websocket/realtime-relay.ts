import type { Logger } from 'pino';
import type { RawData, WebSocket } from 'ws';
import { priceTableOf } from '../accounting/request-cost.ts';
import { saneCost, tokenCount } from '../accounting/token-count.ts';
import { DEFAULT_WORST_OUTPUT_TOKENS } from '../budgets/budget-admission.ts';
import type { WorstCase } from '../budgets/budget-enforcer.ts';
import type { SessionBudget } from '../budgets/session-budget.ts';
import { GatewayError, toErrorBody } from '../errors.ts';
import type { RequestContext } from '../request-context.ts';
import type { Admission, RateLimiter } from '../ratelimit/rate-limiter.ts';
import type { ReachableTarget } from '../routing/reachable-targets.ts';
import { deniedBody, hookResultsOf, logAsync, runInput, runOptionsOf, type CompiledGuardrails, type GuardrailRuntime } from '../endpoints/guardrail-flow.ts';
import { CLOSE, READY, type Session, type SocketLimits } from './socket-registry.ts';
import type { UpstreamSocket } from './realtime-upstream.ts';

// GET /v1/realtime relayed to OpenAI or Azure OpenAI realtime. The upstream socket is opened
// before the client's upgrade is accepted (realtime-upstream.ts). Frames
// are relayed both ways; every `response.done` is read for its usage (input, output, cached
// and audio tokens), which is added to the session's usage, priced (audio at the model's
// audio rates), charged to the key's token limits and budgets as it arrives; the session is
// recorded once, when it ends, with its total usage and cost (websocket-plugin.ts).

const MAX_BAD_FRAMES = 16;
/** Client frames waiting behind an input guardrail check; past it the session closes 1013. */
const MAX_QUEUED_FRAMES = 256;

/**
 * What the next response may cost, per response: its prompt is at least the conversation so
 * far (the last response's input, kept here), its output at most the realtime API's cap
 * (4096 tokens), all of it audio at the model's audio rate.
 */
export interface RealtimeEstimate {
  prompt: number;
  audioPrompt: number;
}

/** The worst case of a session's next response over every target it may reach, for its budget reservation. */
export function realtimeWorstCase(context: RequestContext, targets: readonly ReachableTarget[], estimate: RealtimeEstimate): WorstCase {
  const table = priceTableOf(context.state);
  const output = DEFAULT_WORST_OUTPUT_TOKENS;
  const usage = { prompt: estimate.prompt, audioPrompt: estimate.audioPrompt, completion: output, audioCompletion: output };
  let costUsd: number | undefined;
  const reached = targets.length > 0 ? targets : [{ provider: context.provider, model: context.model }];
  for (const target of reached) {
    const cost = saneCost(table.costUsd(target.provider, target.model ?? context.model, usage, context.startedAtMs));
    if (cost !== undefined) costUsd = Math.max(costUsd ?? 0, cost);
  }
  return { costUsd, tokens: estimate.prompt + output };
}

export interface RelayDeps {
  readonly context: RequestContext;
  readonly limits: SocketLimits;
  readonly logger: Logger;
  readonly rateLimiter: RateLimiter | undefined;
  readonly admission: Admission | undefined;
  /** The session's usage-limit policies, charged per response.done; undefined without budgets. */
  readonly budget?: SessionBudget | undefined;
  /** Read by the budget's next reservation; updated per response.done. */
  readonly estimate?: RealtimeEstimate | undefined;
  /** The route's input guardrails (absent or empty: frames are relayed without a check). */
  readonly guardrails?: { readonly compiled: CompiledGuardrails; readonly runtime: GuardrailRuntime } | undefined;
}

interface SessionUsage {
  input: number;
  output: number;
  cached: number;
  audioInput: number;
  cachedAudio: number;
  audioOutput: number;
  responses: number;
  costUsd: number;
}

export class RealtimeRelay implements Session {
  readonly socket: WebSocket;
  readonly keyId: string | undefined;
  readonly #upstream: WebSocket;
  readonly #deps: RelayDeps;
  readonly #usage: SessionUsage = { input: 0, output: 0, cached: 0, audioInput: 0, cachedAudio: 0, audioOutput: 0, responses: 0, costUsd: 0 };
  #charged = false;
  #badFrames = 0;
  /** With guardrails: client frames in order behind the one being checked. */
  #queue: Promise<void> = Promise.resolve();
  #queued = 0;
  #idle: NodeJS.Timeout | undefined;

  constructor(client: WebSocket, upstream: UpstreamSocket, deps: RelayDeps) {
    this.socket = client;
    this.keyId = deps.context.apiKey?.id;
    this.#upstream = upstream.socket;
    this.#deps = deps;
    upstream.relayed = true;
    const lifetime = setTimeout(() => this.#closeBoth(CLOSE.normal, 'session duration limit reached'), deps.limits.maxSessionMs).unref();
    this.#touch();
    client.on('message', (data, isBinary) => this.#fromClient(data, isBinary));
    this.#upstream.on('message', (data, isBinary) => this.#fromUpstream(data, isBinary));
    client.once('close', (code, reason) => {
      clearTimeout(lifetime);
      if (this.#idle !== undefined) clearTimeout(this.#idle);
      closeSocket(this.#upstream, code, reason.toString('utf8'));
      this.#finish();
    });
    this.#upstream.once('close', (code, reason) => closeSocket(client, code, reason.toString('utf8') || 'upstream closed'));
    this.#upstream.on('error', (error) => {
      deps.logger.warn({ err: { message: error.message.slice(0, 300) } }, 'realtime upstream socket failed');
      closeSocket(client, CLOSE.internal, 'upstream error');
    });
    this.#upstream.resume();
  }

  drain(): void {
    this.#closeBoth(CLOSE.goingAway, 'server shutting down');
  }

  #touch(): void {
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#idle = setTimeout(() => this.#closeBoth(CLOSE.normal, 'idle timeout'), this.#deps.limits.idleTimeoutMs).unref();
  }

  #closeBoth(code: number, reason: string): void {
    closeSocket(this.socket, code, reason);
    closeSocket(this.#upstream, code, reason);
  }

  #fromClient(data: RawData, isBinary: boolean): void {
    this.#touch();
    // Realtime events are JSON text; audio travels base64 inside them.
    if (isBinary) return this.#refuse('Binary frames are not accepted: send each event as a JSON text frame.');
    const text = rawText(data);
    if (!looksLikeEvent(text)) return this.#refuse('An event is a JSON object with a string "type".');
    this.#badFrames = 0;
    const guardrails = this.#deps.guardrails;
    if (guardrails === undefined || guardrails.compiled.empty) return this.#toUpstream(text);
    // Checked frames keep their order: each waits for the one before it.
    if (++this.#queued > MAX_QUEUED_FRAMES) return this.#closeBoth(CLOSE.tryAgainLater, 'too many events waiting for guardrail checks');
    this.#queue = this.#queue
      .then(() => this.#checked(text, guardrails))
      .catch((error: unknown) => this.#deps.logger.warn({ err: { message: (error as Error).message } }, 'realtime guardrail check failed'))
      .finally(() => this.#queued--);
  }

  #toUpstream(text: string): void {
    if (this.#upstream.readyState !== READY.open) return;
    if (this.#upstream.bufferedAmount + text.length > this.#deps.limits.maxBufferedBytes) {
      this.#closeBoth(CLOSE.tryAgainLater, 'upstream is not reading: send buffer full');
      return;
    }
    this.#upstream.send(text);
  }

  /** Input guardrails on the text a client adds to the conversation; a deny is an error event, not forwarded. */
  async #checked(text: string, guardrails: NonNullable<RelayDeps['guardrails']>): Promise<void> {
    const event = JSON.parse(text) as Record<string, unknown>;
    const said = userText(event);
    if (said === undefined) return this.#toUpstream(text);
    const context = this.#deps.context;
    const requestBody = { model: context.model, messages: [{ role: 'user', content: said }] };
    const outcome = await runInput(guardrails.compiled, { endpoint: 'chat.completions', requestBody, metadata: context.metadata, model: context.model }, runOptionsOf(guardrails.runtime));
    logAsync(outcome, guardrails.runtime.logger, context.traceId);
    if (outcome?.denied === true) {
      context.guardrailVerdict = 'deny';
      const denied = deniedBody('input', hookResultsOf(outcome, undefined)) as { error: Record<string, unknown> };
      if (this.socket.readyState === READY.open) this.socket.send(JSON.stringify({ type: 'error', event_id: event['event_id'] ?? null, error: denied.error }));
      return;
    }
    this.#toUpstream(text);
  }

  #fromUpstream(data: RawData, isBinary: boolean): void {
    if (this.socket.readyState !== READY.open) return;
    const payload = isBinary ? data : rawText(data);
    const size = typeof payload === 'string' ? payload.length : rawLength(data);
    if (this.socket.bufferedAmount + size > this.#deps.limits.maxBufferedBytes) {
      this.#closeBoth(CLOSE.policy, 'client is not reading: send buffer full');
      return;
    }
    if (typeof payload === 'string' && payload.includes('"response.done"')) this.#account(payload);
    this.socket.send(payload as never, { binary: isBinary });
  }

  #refuse(message: string): void {
    if (this.socket.readyState === READY.open) {
      this.socket.send(JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', code: 'AIGW_ERR_INVALID_BODY', message, param: null } }));
    }
    if (++this.#badFrames >= MAX_BAD_FRAMES) this.#closeBoth(CLOSE.policy, 'too many invalid events');
  }

  /** One response's usage: added to the session, charged to token limits now. */
  #account(text: string): void {
    let event: Record<string, unknown>;
    try {
      event = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return;
    }
    if (event['type'] !== 'response.done') return;
    const usage = objectOf(objectOf(event['response'])?.['usage']);
    if (usage === undefined) return;
    const input = tokenCount(usage['input_tokens']) ?? 0;
    const output = tokenCount(usage['output_tokens']) ?? 0;
    const inputDetails = objectOf(usage['input_token_details']);
    const outputDetails = objectOf(usage['output_token_details']);
    // OpenAI's convention: cached ⊂ input, audio ⊂ input (its cached part included), audio ⊂ output.
    const cached = Math.min(tokenCount(inputDetails?.['cached_tokens']) ?? 0, input);
    const audioInput = Math.min(tokenCount(inputDetails?.['audio_tokens']) ?? 0, input);
    const cachedAudio = Math.min(tokenCount(objectOf(inputDetails?.['cached_tokens_details'])?.['audio_tokens']) ?? 0, cached, audioInput);
    const audioOutput = Math.min(tokenCount(outputDetails?.['audio_tokens']) ?? 0, output);
    const total = this.#usage;
    total.input += input;
    total.output += output;
    total.cached += cached;
    total.audioInput += audioInput;
    total.cachedAudio += cachedAudio;
    total.audioOutput += audioOutput;
    total.responses++;
    const context = this.#deps.context;
    context.usage = {
      prompt: total.input,
      completion: total.output,
      total: total.input + total.output,
      cachedPrompt: total.cached,
      audioPrompt: total.audioInput,
      cachedAudioPrompt: total.cachedAudio,
      audioCompletion: total.audioOutput,
    };
    context.upstreamDoneAt = process.hrtime.bigint();
    this.#charge(input + output);
    // This response priced on its own (audio at audio rates) and charged to the budgets; the
    // next response's reservation starts from this one's prompt.
    const cost = saneCost(
      priceTableOf(context.state).costUsd(
        context.provider,
        context.model,
        { prompt: input, completion: output, cachedPrompt: cached, audioPrompt: audioInput, cachedAudioPrompt: cachedAudio, audioCompletion: audioOutput },
        context.startedAtMs,
      ),
    );
    if (cost !== undefined) total.costUsd += cost;
    const { budget, estimate } = this.#deps;
    if (estimate !== undefined) {
      estimate.prompt = input;
      estimate.audioPrompt = audioInput;
    }
    budget?.charge({ costUsd: cost, tokens: input + output }).catch((error: unknown) => this.#overBudget(error));
  }

  /** The next response cannot be covered: an error event with the refusal, then close 1008 (1013 when the store is down). */
  #overBudget(error: unknown): void {
    const refusal = error instanceof GatewayError ? error : new GatewayError('AIGW_ERR_INTERNAL', 'The session budget could not be charged.');
    if (this.socket.readyState === READY.open) this.socket.send(JSON.stringify({ type: 'error', event_id: null, error: toErrorBody(refusal).error }));
    const overBudget = refusal.code === 'AIGW_ERR_BUDGET_EXCEEDED';
    this.#closeBoth(overBudget ? CLOSE.policy : CLOSE.tryAgainLater, overBudget ? 'budget exceeded' : 'budget unavailable');
  }

  // The first charge settles the upgrade's reservation; later ones add to the windows.
  #charge(tokens: number): void {
    const { rateLimiter, admission } = this.#deps;
    if (rateLimiter === undefined || admission === undefined || admission.tokenWindows.length === 0) return;
    rateLimiter.settleTokens(this.#charged ? { tokenWindows: admission.tokenWindows, reserved: admission.tokenWindows.map(() => 0) } : admission, tokens);
    this.#charged = true;
  }

  #finish(): void {
    const total = this.#usage;
    const context = this.#deps.context;
    this.#deps.logger.info(
      {
        trace_id: context.traceId,
        realtime: {
          responses: total.responses,
          input_tokens: total.input,
          output_tokens: total.output,
          cached_tokens: total.cached,
          audio_input_tokens: total.audioInput,
          cached_audio_tokens: total.cachedAudio,
          audio_output_tokens: total.audioOutput,
          cost_usd: total.costUsd,
        },
      },
      'realtime session ended',
    );
    // Nothing was spent: the upgrade's reservation is returned.
    if (!this.#charged) this.#charge(0);
    this.#deps.budget?.close();
  }
}

/** The text of a user message a client adds (`conversation.item.create`), joined; undefined when none. */
function userText(event: Record<string, unknown>): string | undefined {
  if (event['type'] !== 'conversation.item.create') return undefined;
  const item = objectOf(event['item']);
  const content = item?.['content'];
  if (!Array.isArray(content)) return undefined;
  const parts: string[] = [];
  for (const part of content) {
    const text = objectOf(part)?.['text'];
    if (typeof text === 'string') parts.push(text);
  }
  return parts.length === 0 ? undefined : parts.join('\n');
}

function closeSocket(socket: WebSocket, code: number, reason: string): void {
  if (socket.readyState === READY.closing || socket.readyState === READY.closed) return;
  // 1005/1006/1015 describe a close; they cannot be sent.
  const sendable = code === 1000 || (code >= 1001 && code <= 1014 && code !== 1004 && code !== 1005 && code !== 1006) || (code >= 3000 && code <= 4999);
  try {
    socket.close(sendable ? code : CLOSE.normal, Buffer.byteLength(reason) > 120 ? reason.slice(0, 60) : reason);
  } catch {
    socket.terminate();
  }
}

function looksLikeEvent(text: string): boolean {
  try {
    const parsed = JSON.parse(text) as unknown;
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) && typeof (parsed as Record<string, unknown>)['type'] === 'string';
  } catch {
    return false;
  }
}

function rawText(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

function rawLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, part) => sum + part.length, 0);
  return data.byteLength;
}

function objectOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
