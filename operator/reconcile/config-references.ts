import { ROUTING_CREDENTIAL_KEYS } from './resource-schemas.ts';

// What a GatewayConfig's routing config points at (saved providers, prompts, guardrails)
// and whether it carries credentials inline. Walks the `targets` tree iteratively.

export interface ConfigReferences {
  /** `@slug` providers, without the `@`. */
  readonly providerSlugs: readonly string[];
  readonly virtualKeys: readonly string[];
  readonly promptIds: readonly string[];
  readonly guardrailIds: readonly string[];
  /** Paths of credential keys found in the config (`targets[0].api_key`). */
  readonly inlineCredentials: readonly string[];
}

const CREDENTIAL_KEYS = new Set(ROUTING_CREDENTIAL_KEYS);

/** Collects the references of a routing config object; ignores anything that is not one. */
export function configReferences(config: unknown): ConfigReferences {
  const providerSlugs = new Set<string>();
  const virtualKeys = new Set<string>();
  const promptIds = new Set<string>();
  const guardrailIds = new Set<string>();
  const inlineCredentials: string[] = [];
  const pending: Array<{ node: unknown; path: string }> = [{ node: config, path: '' }];
  // Bounded: 8 levels of a real config is tiny; the cap protects against hostile input.
  for (let visited = 0; visited < 10_000; visited++) {
    const item = pending.pop();
    if (item === undefined) break;
    if (!isObject(item.node)) continue;
    const node = item.node;
    for (const key of Object.keys(node)) {
      if (CREDENTIAL_KEYS.has(key)) inlineCredentials.push(item.path === '' ? key : `${item.path}.${key}`);
    }
    const provider = node['provider'];
    if (typeof provider === 'string' && provider.startsWith('@') && provider.length > 1) providerSlugs.add(provider.slice(1));
    if (typeof node['virtual_key'] === 'string') virtualKeys.add(node['virtual_key']);
    if (typeof node['prompt_id'] === 'string') promptIds.add(node['prompt_id']);
    for (const list of [node['input_guardrails'], node['output_guardrails']]) {
      if (!Array.isArray(list)) continue;
      for (const guardrail of list) if (typeof guardrail === 'string') guardrailIds.add(guardrail);
    }
    const targets = node['targets'];
    if (Array.isArray(targets)) {
      targets.forEach((target: unknown, index) => {
        pending.push({ node: target, path: `${item.path === '' ? '' : `${item.path}.`}targets[${index}]` });
      });
    }
  }
  return {
    providerSlugs: [...providerSlugs],
    virtualKeys: [...virtualKeys],
    promptIds: [...promptIds],
    guardrailIds: [...guardrailIds],
    inlineCredentials,
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
