// Builders for custom resources and Secrets as the API server returns them, for the
// renderer's unit tests.
import type { KindName } from '../../operator/reconcile/resource-schemas.ts';
import { emptyResources, type CustomResource, type GatewayResources, type SecretResource } from '../../operator/reconcile/resource-types.ts';
import { CREDENTIAL_LABEL, type CredentialPurpose } from '../../operator/reconcile/secret-access.ts';

let counter = 0;

export function resource(kind: KindName, name: string, spec: unknown, options: { created?: string; generation?: number } = {}): CustomResource {
  counter += 1;
  return {
    apiVersion: 'aigateway.dev/v1alpha1',
    kind,
    metadata: {
      name,
      namespace: 'aigw',
      uid: `uid-${kind}-${name}`,
      generation: options.generation ?? 1,
      creationTimestamp: options.created ?? `2025-01-01T00:00:${String(counter % 60).padStart(2, '0')}Z`,
    },
    spec,
  };
}

/** A Secret; with a purpose it carries the opt-in label the operator requires (aigateway.dev/credential). */
export function secret(name: string, values: Record<string, string>, purpose?: CredentialPurpose): SecretResource {
  return {
    metadata: { name, namespace: 'aigw', ...(purpose === undefined ? {} : { labels: { [CREDENTIAL_LABEL]: purpose } }) },
    data: Object.fromEntries(Object.entries(values).map(([key, value]) => [key, Buffer.from(value).toString('base64')])),
  };
}

export function resources(list: CustomResource[], secrets: SecretResource[] = [], egressAllow: string[] = []): GatewayResources {
  const byKind = emptyResources();
  for (const item of list) byKind[item.kind as KindName].push(item);
  return { resources: byKind, secrets, egressAllow };
}

export const ADMIN_KEY = 'gw-admin-key-0123456789';

/** The examples/ set: a provider with its Secret, a fallback config, a policy, a prompt, a key. */
export function exampleSet(): GatewayResources {
  return resources(
    [
      resource('Provider', 'openai-prod', { provider: 'openai', virtualKey: 'vk-openai-prod', apiKeySecretRef: { name: 'openai', key: 'apiKey' } }),
      resource('Provider', 'openai-backup', { provider: 'openai', customHost: 'http://backup.internal:8080/v1', apiKeySecretRef: { name: 'openai', key: 'backupKey' } }),
      resource('GatewayConfig', 'support-fallback', {
        strategy: { mode: 'fallback', on_status_codes: [429, 500, 502, 503] },
        targets: [
          { provider: '@openai-prod', override_params: { model: 'gpt-4o' } },
          { provider: '@openai-backup', override_params: { model: 'gpt-4o-mini' } },
        ],
      }),
      resource('RateLimitPolicy', 'per-workspace', {
        type: 'requests',
        unit: 'rpm',
        value: 600,
        conditions: [{ key: 'workspace_id', value: 'default' }],
        group_by: [{ key: 'api_key' }],
      }),
      resource('Prompt', 'welcome', {
        model: 'gpt-4o-mini',
        messages: [{ role: 'system', content: 'You are {{tone}}.' }, { role: 'user', content: '{{question}}' }],
        parameters: { temperature: 0.2 },
      }),
      resource('Guardrail', 'no-pii', { checks: [{ id: 'default.regexMatch', parameters: { rule: '\\d{3}-\\d{2}-\\d{4}' } }], deny: true }),
      resource('GatewayAPIKey', 'platform-admin', {
        workspace: 'default',
        scopes: ['inference', 'admin'],
        keySecretRef: { name: 'gateway-keys', key: 'admin' },
      }),
    ],
    [secret('openai', { apiKey: 'sk-prod-0000', backupKey: 'sk-backup-0000\n' }, 'provider'), secret('gateway-keys', { admin: ADMIN_KEY }, 'gateway-key')],
    ['127.0.0.0/8'],
  );
}
