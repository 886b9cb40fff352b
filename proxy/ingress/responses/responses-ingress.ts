import type { IngressTranslator } from '../ingress-translator.ts';
import { OpenAIIngress } from '../openai/openai-ingress.ts';

// The Responses API (POST /v1/responses, and the WebSocket mode's turns, which the socket
// dispatches through that route): OpenAI-shaped like chat, so the identity translator, but
// its stream always reports usage (in `response.completed`, read by usage-tap's
// `response.usage`), so the gateway never asks for it nor cuts it.

export const RESPONSES_INGRESS: IngressTranslator = new OpenAIIngress({ asksStreamUsage: false });
