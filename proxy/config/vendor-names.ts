import type { IncomingHttpHeaders } from 'node:http';

// The spec names vendors with anonymised tokens (vendorA = OpenAI, cloudA = Azure, cloudB =
// Google Vertex AI, cloudC = AWS Bedrock). Users know the real names, so config keys and
// headers are accepted under both; the code reads the spec's names, which stay accepted.

/** Real-name config key → the spec's key. */
export const CONFIG_KEY_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  strict_openai_compliance: 'strict_vendorA_compliance',
  openai_organization: 'vendorA_organization',
  openai_project: 'vendorA_project',
  azure_resource_name: 'cloudA_resource_name',
  azure_deployment_id: 'cloudA_deployment_id',
  azure_api_version: 'cloudA_api_version',
  azure_model_name: 'cloudA_model_name',
  azure_region: 'cloudA_region',
  azure_deployment_name: 'cloudA_deployment_name',
  azure_endpoint_name: 'cloudA_endpoint_name',
  azure_deployment_type: 'cloudA_deployment_type',
  vertex_project_id: 'cloudB_project_id',
  vertex_region: 'cloudB_region',
  vertex_service_account_json: 'cloudB_service_account_json',
  aws_access_key_id: 'cloudC_access_key_id',
  aws_secret_access_key: 'cloudC_secret_access_key',
  aws_session_token: 'cloudC_session_token',
  aws_region: 'cloudC_region',
});

/** Real-name header (lower case, as Node delivers it) → the spec's header. */
export const HEADER_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  'x-gateway-azure-resource-name': 'x-gateway-clouda-resource-name',
  'x-gateway-azure-deployment-id': 'x-gateway-clouda-deployment-id',
  'x-gateway-azure-api-version': 'x-gateway-clouda-api-version',
  'x-gateway-azure-model-name': 'x-gateway-clouda-model-name',
  'x-gateway-vertex-project-id': 'x-gateway-cloudb-project-id',
  'x-gateway-vertex-region': 'x-gateway-cloudb-region',
  'x-gateway-aws-access-key-id': 'x-gateway-cloudc-access-key-id',
  'x-gateway-aws-secret-access-key': 'x-gateway-cloudc-secret-access-key',
  'x-gateway-aws-session-token': 'x-gateway-cloudc-session-token',
  'x-gateway-aws-region': 'x-gateway-cloudc-region',
});

const HEADER_ALIAS_ENTRIES = Object.entries(HEADER_ALIASES);

/**
 * Copies real-name headers to the spec's names (when the spec's is not sent too), in
 * place, so every reader sees one name. Ten lookups; nothing is allocated without them.
 */
export function normaliseVendorHeaders(headers: IncomingHttpHeaders): void {
  for (const [alias, spec] of HEADER_ALIAS_ENTRIES) {
    const value = headers[alias];
    if (value !== undefined && headers[spec] === undefined) headers[spec] = value;
  }
}

/**
 * A routing config with real-name keys renamed to the spec's, at every level (targets
 * too). Unchanged (the same object) when it has none; a key sent under both names keeps
 * the alias, which the strict schema then reports.
 */
export function withSpecConfigKeys(input: unknown): unknown {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return input;
  const record = input as Record<string, unknown>;
  let renamed: Record<string, unknown> | undefined;
  for (const key of Object.keys(record)) {
    const spec = Object.hasOwn(CONFIG_KEY_ALIASES, key) ? CONFIG_KEY_ALIASES[key] : undefined;
    if (spec === undefined || Object.hasOwn(record, spec)) continue;
    renamed ??= { ...record };
    renamed[spec] = renamed[key];
    delete renamed[key];
  }
  const targets = record['targets'];
  if (Array.isArray(targets)) {
    const mapped = targets.map(withSpecConfigKeys);
    if (mapped.some((target, index) => target !== targets[index])) {
      renamed ??= { ...record };
      renamed['targets'] = mapped;
    }
  }
  return renamed ?? input;
}

/** Keys sent under both names (`aws_region` and `cloudC_region`), at any level: `[path, alias, spec]`. */
export function vendorKeyConflicts(input: unknown, path: ReadonlyArray<string | number> = []): Array<{ path: Array<string | number>; message: string }> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return [];
  const record = input as Record<string, unknown>;
  const conflicts: Array<{ path: Array<string | number>; message: string }> = [];
  for (const key of Object.keys(record)) {
    const spec = Object.hasOwn(CONFIG_KEY_ALIASES, key) ? CONFIG_KEY_ALIASES[key] : undefined;
    if (spec !== undefined && Object.hasOwn(record, spec)) conflicts.push({ path: [...path, key], message: `names the same setting as ${spec}: send one of them` });
  }
  const targets = record['targets'];
  if (Array.isArray(targets)) targets.forEach((target, index) => conflicts.push(...vendorKeyConflicts(target, [...path, 'targets', index])));
  return conflicts;
}
