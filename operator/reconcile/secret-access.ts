import type { SecretKeyRef } from './resource-schemas.ts';
import type { SecretResource } from './resource-types.ts';

// Which Secret a resource may read (the operator is no confused deputy). Whoever may create
// a Provider chooses its apiKeySecretRef and its customHost; without this check the operator
// would read any Secret of the namespace for them and send the value to that host. So a
// Secret opts in with a label naming its one purpose, and the gateway's own secrets (the
// rendered credentials, the sealing key, store URLs — names the chart passes in) are refused
// even when labelled. Pure: the renderer calls it with what the informer cached.

/** The opt-in label: `provider` (a Provider's apiKeySecretRef), `gateway-key` (a GatewayAPIKey's keySecretRef) or `mcp-server` (an MCPServer's headersFrom). */
export const CREDENTIAL_LABEL = 'aigateway.dev/credential';

export type CredentialPurpose = 'provider' | 'gateway-key' | 'mcp-server';

const PURPOSE_OF_KIND: Readonly<Record<CredentialPurpose, string>> = { provider: 'Provider', 'gateway-key': 'GatewayAPIKey', 'mcp-server': 'MCPServer' };

/** Secret types that may hold a credential; service-account tokens, registry and TLS Secrets never do. */
const CREDENTIAL_TYPES = new Set([undefined, '', 'Opaque']);

/** A store URL (Redis, PostgreSQL) is the gateway's own secret, never a provider key. */
const STORE_URL = /^\s*(?:rediss?|redis\+sentinel|postgres(?:ql)?):\/\//i;

export type SecretRead = { ok: true; value: string } | { ok: false; reason: string; message: string };

/**
 * A Secret key's value for a resource of the given purpose, or why it may not be read.
 * Values are UTF-8; a trailing newline is dropped.
 *
 * @example readCredential(secrets, { name: 'openai', key: 'apiKey' }, 'provider', new Set(['aigateway-credentials']))
 */
export function readCredential(
  secrets: ReadonlyMap<string, SecretResource>,
  ref: SecretKeyRef,
  purpose: CredentialPurpose,
  protectedNames: ReadonlySet<string>,
): SecretRead {
  if (protectedNames.has(ref.name)) {
    return notPermitted(`Secret "${ref.name}" holds the gateway's own secrets (rendered credentials, sealing key or a store URL); no resource may reference it.`);
  }
  const secret = secrets.get(ref.name);
  if (secret === undefined) {
    return { ok: false, reason: 'SecretNotFound', message: `Secret "${ref.name}" not found (the operator sees only Secrets labelled ${CREDENTIAL_LABEL}=${purpose}).` };
  }
  if (!CREDENTIAL_TYPES.has(secret.type)) return notPermitted(`Secret "${ref.name}" has type ${secret.type}; only Opaque Secrets hold credentials.`);
  const label = secret.metadata.labels?.[CREDENTIAL_LABEL];
  if (label !== purpose) {
    const why =
      label === undefined
        ? 'the operator reads only Secrets that opt in'
        : label === 'gateway-key' || label === 'provider' || label === 'mcp-server'
          ? `it is labelled ${CREDENTIAL_LABEL}=${label}, for ${PURPOSE_OF_KIND[label]}s only`
          : `"${label}" is not a credential purpose (provider, gateway-key or mcp-server)`;
    return notPermitted(`Secret "${ref.name}" is not labelled ${CREDENTIAL_LABEL}=${purpose}: ${why}.`);
  }
  const encoded = secret.data?.[ref.key];
  if (encoded === undefined) return { ok: false, reason: 'SecretKeyNotFound', message: `Secret "${ref.name}" has no key "${ref.key}".` };
  const value = Buffer.from(encoded, 'base64').toString('utf8').replace(/\r?\n$/, '');
  if (value === '') return { ok: false, reason: 'InvalidSecretValue', message: `Secret "${ref.name}" key "${ref.key}" is empty.` };
  if (STORE_URL.test(value)) return notPermitted(`Secret "${ref.name}" key "${ref.key}" holds a store URL (Redis or PostgreSQL), not a credential.`);
  return { ok: true, value };
}

function notPermitted(message: string): SecretRead {
  return { ok: false, reason: 'SecretNotPermitted', message };
}
