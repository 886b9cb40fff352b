import { isIP } from 'node:net';
import { isProviderName, PROVIDER_NAMES, SELF_HOSTED_PROVIDERS } from './provider-names.ts';
import type { PlanNode } from './routing-plan.ts';
import type { EgressPolicy } from '../upstream/egress-policy.ts';
import { didYouMean } from './did-you-mean.ts';

// What the schema cannot see: whether a state would work. A target naming no saved provider,
// a provider name nobody knows without a host, a self-hosted provider without one, an
// operator-set host the egress policy denies — each fails every request that reaches it, so
// each is a problem at `validate`, at start, on reload (the last good state keeps serving)
// and in the operator (as resource conditions). One set of checks for all four.
//
// Host checks are static: an IP literal is checked as it is; a name that can only resolve
// to a private or loopback address (localhost, single-label, .svc, .cluster.local, .local,
// .internal…) is a problem unless egress.allow lists the name or a network it could be in.
// Public names are left to the connect-time check on the resolved address.

export interface StateProblem {
  /** `configs.prod.targets[1].provider`, `providers.vllm.customHost`. */
  readonly path: string;
  /** What is wrong, with a did-you-mean hint when a known name is close. */
  readonly message: string;
  /**
   * `unresolved`: a reference to a saved provider that does not exist (the operator renders
   * the config anyway and reports ResolvedRefs=False); `invalid`: wrong as written.
   */
  readonly kind: 'invalid' | 'unresolved';
}

/** `path: message`, the form every loader error takes. */
export function formatProblem(problem: StateProblem): string {
  return `${problem.path}: ${problem.message}`;
}

/** The saved providers a config's targets may name. */
export interface ProviderReferences {
  readonly slugs: ReadonlySet<string>;
  readonly virtualKeys: ReadonlySet<string>;
  /** Names (slugs or virtual keys) known to be missing on purpose: not a problem (see state-schema.ts). */
  readonly unavailable: ReadonlySet<string>;
}

/** Problems of one saved provider: an unknown provider name without a host, a host egress denies. */
export function providerEntryProblems(
  entry: { readonly provider: string; readonly customHost?: string | undefined },
  path: string,
  egress: EgressPolicy,
): StateProblem[] {
  const problems: StateProblem[] = [];
  const host = entry.customHost;
  const named = providerNameProblem(entry.provider, host !== undefined, 'customHost');
  if (named !== undefined) problems.push({ path: `${path}.provider`, message: named, kind: 'invalid' });
  const denied = host === undefined ? undefined : staticEgressProblem(host, egress);
  if (denied !== undefined) problems.push({ path: `${path}.customHost`, message: denied, kind: 'invalid' });
  return problems;
}

/**
 * Problems of a compiled saved config's targets, each leaf with its effective settings.
 * `path` is where the config sits (`configs.prod`); leaves add their own (`.targets[1]`).
 */
export function planTargetProblems(plan: PlanNode, path: string, references: ProviderReferences, egress: EgressPolicy): StateProblem[] {
  const problems: StateProblem[] = [];
  const pending: Array<{ node: PlanNode; parent: PlanNode | undefined }> = [{ node: plan, parent: undefined }];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    const { node, parent } = item;
    const where = `${path}${node.path.slice('config'.length)}`;
    const { provider, virtual_key: virtualKey, custom_host: customHost } = node.settings;
    // A host is checked where it is written; the nodes inheriting it are not reported again.
    if (customHost !== undefined && customHost !== parent?.settings.custom_host) {
      const denied = staticEgressProblem(customHost, egress);
      if (denied !== undefined) problems.push({ path: `${where}.custom_host`, message: denied, kind: 'invalid' });
    }
    if (node.mode !== undefined) {
      for (let index = node.children.length - 1; index >= 0; index--) pending.push({ node: node.children[index] as PlanNode, parent: node });
      continue;
    }
    if (virtualKey !== undefined) {
      if (!references.virtualKeys.has(virtualKey) && !references.slugs.has(virtualKey) && !references.unavailable.has(virtualKey)) {
        const hint = didYouMean(virtualKey, [...references.virtualKeys, ...references.slugs]);
        problems.push({ path: `${where}.virtual_key`, message: `no saved provider with virtual key "${virtualKey}"${hint}`, kind: 'unresolved' });
      }
    } else if (provider === undefined) {
      problems.push({ path: where, message: 'a target needs provider or virtual_key', kind: 'invalid' });
    } else if (provider.startsWith('@')) {
      const slug = provider.slice(1);
      if (!references.slugs.has(slug) && !references.unavailable.has(slug)) {
        problems.push({ path: `${where}.provider`, message: `no saved provider "@${slug}"${didYouMean(slug, references.slugs, '@')}`, kind: 'unresolved' });
      }
    } else {
      const named = providerNameProblem(provider, customHost !== undefined, 'custom_host');
      if (named !== undefined) problems.push({ path: `${where}.provider`, message: named, kind: 'invalid' });
    }
  }
  return problems;
}

/** Why a plain provider name cannot be called, or undefined. */
function providerNameProblem(provider: string, hasHost: boolean, hostKey: string): string | undefined {
  if (hasHost) return undefined; // any OpenAI-compatible host may be named freely
  if (!isProviderName(provider)) {
    return `unknown provider "${provider}"${didYouMean(provider, PROVIDER_NAMES)}; name a supported provider, or set ${hostKey} for an OpenAI-compatible host`;
  }
  if (SELF_HOSTED_PROVIDERS.has(provider)) {
    return `provider "${provider}" is self-hosted: set ${hostKey}`;
  }
  return undefined;
}

// One sample address of each network a name of that kind may resolve to.
const LOOPBACK_SAMPLES = ['127.0.0.1', '::1'];
const CLUSTER_SAMPLES = ['10.0.0.1', '172.16.0.1', '192.168.0.1', '100.64.0.1', 'fd00::1'];
const PRIVATE_SAMPLES = [...CLUSTER_SAMPLES, '127.0.0.1'];
// Kubernetes service names: a cluster address, never loopback.
const CLUSTER_SUFFIXES = ['.svc', '.cluster.local'];
const INTERNAL_SUFFIXES = ['.local', '.internal', '.localdomain', '.lan', '.home.arpa', '.intranet', '.corp'];

/**
 * Why egress would refuse every connection to the host of `url`, judged without DNS; undefined
 * when it is allowed or can only be known at connect time (a public name).
 */
export function staticEgressProblem(url: string, egress: EgressPolicy): string | undefined {
  const parsed = URL.parse(url);
  if (parsed === null) return undefined; // the schema reports it
  const host = parsed.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '').toLowerCase();
  const hint = `; add "${host}" (or its network) to egress.allow`;
  const byName = egress.checkName(host);
  if (byName !== undefined) return `${byName}${hint}`;
  if (isIP(host) !== 0) {
    const denied = egress.check(host, host);
    return denied === undefined ? undefined : `${denied}${hint}`;
  }
  const loopback = host === 'localhost' || host.endsWith('.localhost');
  const cluster = CLUSTER_SUFFIXES.some((suffix) => host.endsWith(suffix));
  const internal = !host.includes('.') || INTERNAL_SUFFIXES.some((suffix) => host.endsWith(suffix));
  const samples = loopback ? LOOPBACK_SAMPLES : cluster ? CLUSTER_SAMPLES : internal ? PRIVATE_SAMPLES : undefined;
  if (samples === undefined) return undefined;
  if (samples.some((address) => egress.check(host, address) === undefined)) return undefined;
  const kind = loopback ? 'loopback' : cluster ? 'private (cluster)' : 'private (LAN)';
  return `egress to ${host} is denied: the name resolves to a ${kind} address, which egress.allow does not list${hint}`;
}
