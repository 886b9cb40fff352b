import { fetch as undiciFetch, type Dispatcher } from 'undici';
import { runAfterHooks, runBeforeHooks, type HooksOutcome } from '../guardrails/run-hooks.ts';
import type { McpServer } from './mcp-catalog.ts';

// A server's input_guardrails run on a tool call's arguments, its output_guardrails on the
// result's text, with the gateway's existing checks. The checks read chat-shaped bodies, so
// the arguments are the user message (their JSON) and the result's text parts the answer.
// A denying guardrail refuses the call (JSON-RPC -32004); a server whose guardrails do not
// compile (an unknown id) refuses every call rather than running unchecked. Rewrites
// (redaction) are not applied to tool traffic.

const GUARDRAIL_DENIED = -32004;

class GuardrailDenied extends Error {
  readonly code = GUARDRAIL_DENIED;
  readonly data: unknown;
  constructor(message: string, data?: unknown) {
    super(message);
    this.data = data;
  }
}

export async function checkArguments(server: McpServer, tool: string, args: unknown, metadata: Readonly<Record<string, unknown>> | undefined, signal: AbortSignal, dispatcher: Dispatcher): Promise<void> {
  if (server.guardrailProblem !== undefined) throw new GuardrailDenied(`${server.guardrailProblem}; calls are refused until it is fixed.`);
  if (server.guardrails === undefined || server.guardrails.before.length === 0) return;
  const outcome = await runBeforeHooks(server.guardrails, { endpoint: 'chat.completions', requestBody: chatBody(tool, args), metadata, model: tool, provider: `mcp:${server.name}`, signal }, { fetch: fetchVia(dispatcher) });
  refuseWhenDenied(outcome, 'arguments');
}

export async function checkResult(server: McpServer, tool: string, result: unknown, metadata: Readonly<Record<string, unknown>> | undefined, signal: AbortSignal, dispatcher: Dispatcher): Promise<void> {
  if (server.guardrails === undefined || server.guardrails.after.length === 0) return;
  const text = textOf(result);
  const outcome = await runAfterHooks(
    server.guardrails,
    {
      endpoint: 'chat.completions',
      requestBody: chatBody(tool, undefined),
      responseBody: { object: 'chat.completion', model: tool, choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: text } }] },
      metadata,
      model: tool,
      provider: `mcp:${server.name}`,
      signal,
    },
    { fetch: fetchVia(dispatcher) },
  );
  refuseWhenDenied(outcome, 'result');
}

function refuseWhenDenied(outcome: HooksOutcome, what: 'arguments' | 'result'): void {
  if (!outcome.denied) return;
  const failed = outcome.results.filter((hook) => !hook.verdict).map((hook) => hook.id);
  throw new GuardrailDenied(`A guardrail denied this tool call's ${what}${failed.length > 0 ? ` (${failed.join(', ')})` : ''}.`, { guardrails: failed });
}

function chatBody(tool: string, args: unknown): Record<string, unknown> {
  return { model: tool, messages: [{ role: 'user', content: args === undefined ? '' : JSON.stringify(args) }] };
}

function textOf(result: unknown): string {
  const content = (result as { content?: unknown })?.content;
  if (!Array.isArray(content)) return JSON.stringify(result ?? null);
  return content
    .map((part) => {
      const item = part as { type?: unknown; text?: unknown; resource?: { text?: unknown } };
      if (typeof item.text === 'string') return item.text;
      if (typeof item.resource?.text === 'string') return item.resource.text;
      return '';
    })
    .join('\n');
}

function fetchVia(dispatcher: Dispatcher): typeof fetch {
  return ((url: string | URL, init?: RequestInit) => undiciFetch(url, { ...(init as object), redirect: 'manual', dispatcher } as never)) as unknown as typeof fetch;
}
