import { dump } from 'js-yaml';
import { hashSources } from '../../proxy/config/state-loader.ts';
import type { RenderResult } from './render-gateway-state.ts';

// The rendered documents as the files the proxy reads: YAML text plus the content hash the
// proxy computes over the same bytes (so the ConfigMap annotation equals the hash in
// `aigateway_config_info{hash}` and GET /ready once a proxy serves it).

export const STATE_FILE = 'gateway.yaml';
export const CREDENTIALS_FILE = 'credentials.yaml';

export interface SerializedState {
  readonly stateYaml: string;
  readonly credentialsYaml: string;
  readonly hash: string;
}

const HEADER = '# Rendered by the aigateway operator from custom resources; edits are overwritten.\n';

export function serializeRenderedState(result: Pick<RenderResult, 'state' | 'credentials'>): SerializedState {
  const stateYaml = HEADER + toYaml(result.state);
  const credentialsYaml = HEADER + toYaml(result.credentials);
  return { stateYaml, credentialsYaml, hash: hashSources({ state: stateYaml, credentials: credentialsYaml }) };
}

function toYaml(document: unknown): string {
  return dump(literalForProxy(document), { lineWidth: -1, noRefs: true });
}

// The proxy substitutes ${NAME} in every string of the state file. Values from resources
// are literal text, so each placeholder is escaped as $${NAME} (which the proxy turns back
// into ${NAME}). Undefined members are dropped (YAML has no undefined).
const PLACEHOLDER_START = /\$(?=\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\})/g;

/** A deep copy whose strings survive the proxy's ${ENV} substitution unchanged. */
export function literalForProxy(value: unknown): unknown {
  if (typeof value === 'string') return value.includes('${') ? value.replace(PLACEHOLDER_START, '$$$$') : value;
  if (Array.isArray(value)) return value.map(literalForProxy);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value)) if (child !== undefined) out[key] = literalForProxy(child);
    return out;
  }
  return value;
}
