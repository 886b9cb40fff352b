// aigateway SDK for TypeScript/JavaScript: the gateway's client parameters as headers, and
// an openai client preconfigured for the gateway. See docs/sdk.md.
export {
  createHeaders,
  nullableHeaders,
  encodeJson,
  GatewayClientError,
  GATEWAY_PARAMETERS,
  type GatewayParams,
  type GatewayParamName,
  type GatewayParameter,
  type GatewayConfig,
  type GatewayMetadata,
} from './headers.ts';
export { Gateway, requestOptions, DEFAULT_BASE_URL, type GatewayOptions, type GatewayRequestOptions } from './gateway.ts';
export {
  Prompts,
  Policies,
  RateLimitPolicies,
  Logs,
  type PromptHyperparameters,
  type PromptRenderParams,
  type PromptRenderResponse,
  type RenderedPrompt,
  type RenderedMessage,
  type RateLimitPolicy,
  type RateLimitPolicyCreateParams,
  type RateLimitPolicyCreated,
  type RateLimitPolicyList,
  type RateLimitPolicyListParams,
  type RateLimitPolicyUpdateParams,
  type RateLimitStatus,
  type RateLimitType,
  type RateLimitUnit,
  type LogEntry,
  type LogList,
  type LogListParams,
} from './resources.ts';
export { Gateway as default } from './gateway.ts';
