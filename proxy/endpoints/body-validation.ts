// Kept for the stream pipeline's imports until they move: the endpoint names live in proxy/openai/.
export type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
