import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { MessagesIngress } from './anthropic-messages/messages-ingress.ts';
import type { IngressTranslator } from './ingress-translator.ts';
import { OPENAI_CHAT_INGRESS, OPENAI_EMBEDDINGS_INGRESS } from './openai/openai-ingress.ts';
import { RESPONSES_INGRESS } from './responses/responses-ingress.ts';

/**
 * The request's ingress translator, by the endpoint its route serves: created once per
 * request (the OpenAI-shaped ones hold nothing per request and are shared).
 */
export function ingressFor(endpoint: InferenceEndpoint): IngressTranslator {
  switch (endpoint) {
    case 'chat.completions':
    case 'completions':
      return OPENAI_CHAT_INGRESS;
    case 'embeddings':
      return OPENAI_EMBEDDINGS_INGRESS;
    case 'responses':
      return RESPONSES_INGRESS;
    case 'messages':
    case 'messages.count_tokens':
      return new MessagesIngress(endpoint);
  }
}
