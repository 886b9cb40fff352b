import type { KindName } from './resource-schemas.ts';

// The Kubernetes objects the renderer reads, reduced to the fields it uses. The k8s layer
// passes what the informers cached; tests build them by hand.

export interface ObjectMeta {
  readonly name: string;
  readonly namespace?: string | undefined;
  readonly uid?: string | undefined;
  readonly generation?: number | undefined;
  readonly resourceVersion?: string | undefined;
  readonly creationTimestamp?: string | undefined;
  readonly labels?: Readonly<Record<string, string>> | undefined;
  readonly annotations?: Readonly<Record<string, string>> | undefined;
}

export interface CustomResource {
  readonly apiVersion?: string | undefined;
  readonly kind?: string | undefined;
  readonly metadata: ObjectMeta;
  readonly spec?: unknown;
  readonly status?: unknown;
}

export interface SecretResource {
  readonly metadata: ObjectMeta;
  /** `Opaque` (or unset) for credentials; other types are refused. */
  readonly type?: string | undefined;
  /** Base64-encoded values, as the API returns them. */
  readonly data?: Readonly<Record<string, string>> | undefined;
}

/** Everything one render reads: the six kinds of one namespace, its Secrets, operator settings. */
export interface GatewayResources {
  readonly resources: Readonly<Record<KindName, readonly CustomResource[]>>;
  readonly secrets: readonly SecretResource[];
  /** `egress.allow` of the rendered state (an operator setting, not a resource). */
  readonly egressAllow?: readonly string[] | undefined;
  /** `egress.clientAllow`: where hosts chosen by a request may go (default: public addresses only). */
  readonly egressClientAllow?: readonly string[] | undefined;
  /** Secrets no resource may reference even when labelled: rendered credentials, sealing key, store URLs. */
  readonly protectedSecrets?: readonly string[] | undefined;
}

export type ConditionStatus = 'True' | 'False' | 'Unknown';

/** A condition as the renderer decides it; the k8s layer adds times and generations. */
export interface DesiredCondition {
  readonly type: 'Accepted' | 'ResolvedRefs' | 'Ready' | 'Programmed' | 'ThresholdReached' | 'Exhausted';
  readonly status: ConditionStatus;
  /** CamelCase, e.g. `SecretNotFound`. */
  readonly reason: string;
  readonly message: string;
}

/** The status one resource should have after this render. */
export interface RenderedStatus {
  readonly kind: KindName;
  readonly name: string;
  readonly uid: string | undefined;
  readonly generation: number;
  readonly conditions: readonly DesiredCondition[];
  /** Whether the resource is part of the rendered state. */
  readonly rendered: boolean;
}

/** An empty resource set (handy for tests and a first render). */
export function emptyResources(): Record<KindName, CustomResource[]> {
  return { GatewayConfig: [], Provider: [], RateLimitPolicy: [], Prompt: [], Guardrail: [], GatewayAPIKey: [], Model: [], MCPServer: [], UsageLimitPolicy: [], ModelPrice: [] };
}
