// POST /v1/prompts/{promptId}/render: the control-plane route that renders a stored
// prompt into chat-completion parameters (the spec's "Rendered prompt data").
// The rendering itself is the pure renderPrompt in proxy/prompts; this is its HTTP shell.
//
// Authentication is the host server's: its onRequest hook checks x-gateway-api-key on
// every /v1 route. Any valid gateway key may render, whatever its scopes: rendering reads
// a prompt and calls no provider, and every key may already run prompts through a config
// with prompt_id. Errors are thrown as GatewayError; the host's error handler turns them
// into the OpenAI error shape.

import type { FastifyPluginAsync } from 'fastify';
import { GatewayError } from '../../proxy/errors.ts';
import { renderPrompt } from '../../proxy/prompts/render-prompt.ts';
import type { PromptEntry } from '../../proxy/prompts/prompt-schema.ts';

/**
 * Where the route finds prompts. Standalone, a source reads the live gateway state
 * snapshot on every call (so a reload is seen at once); in a cluster, Prompt resources.
 *
 * @example const source: PromptSource = { getPrompt: (id) => holder.current.prompts.get(id) };
 */
export interface PromptSource {
  getPrompt(id: string): PromptEntry | undefined;
}

/** The body of a successful render. */
export interface RenderPromptResponse {
  success: true;
  data: Record<string, unknown>;
}

interface RenderRoute {
  Params: { promptId: string };
  Body: unknown;
}

/**
 * A Fastify plugin with the prompt routes.
 *
 * @example app.register(promptRoutes(source));
 *   // POST /v1/prompts/welcome/render {"variables": {"tone": "terse"}}
 *   // → 200 {"success": true, "data": {"model": "gpt-4o-mini", "messages": [...]}}
 */
export function promptRoutes(source: PromptSource): FastifyPluginAsync {
  return async (app) => {
    app.post<RenderRoute>('/v1/prompts/:promptId/render', async (request): Promise<RenderPromptResponse> => {
      const { promptId } = request.params;
      const prompt = source.getPrompt(promptId);
      if (prompt === undefined) {
        throw new GatewayError('AIGW_ERR_NOT_FOUND', `Prompt "${promptId}" not found`, { param: 'promptId' });
      }
      const result = renderPrompt(prompt, request.body);
      if (!result.ok) throw result.error;
      return { success: true, data: result.data };
    });
  };
}
