import { GatewayError } from '../errors.ts';
import type { PromptEntry } from './prompt-schema.ts';
import { renderPrompt } from './render-prompt.ts';

// A config's `prompt_id` turns a chat request into the rendered prompt (docs/prompts.md):
// the rendered model, messages and parameters are the base; other body fields override
// the parameters; body `messages` continue the conversation after the prompt's.

export function applyPrompt(prompt: PromptEntry, body: Record<string, unknown>): Record<string, unknown> {
  const rendered = renderPrompt(prompt, { variables: body['variables'] });
  if (!rendered.ok) throw rendered.error;
  const out: Record<string, unknown> = { ...rendered.data };
  for (const [key, value] of Object.entries(body)) {
    if (key === 'variables') continue;
    if (key === 'messages') {
      if (!Array.isArray(value)) {
        throw new GatewayError('AIGW_ERR_INVALID_BODY', 'messages: must be an array (it continues the prompt).', { param: 'messages' });
      }
      out['messages'] = [...(rendered.data['messages'] as unknown[]), ...value];
      continue;
    }
    out[key] = value;
  }
  return out;
}
