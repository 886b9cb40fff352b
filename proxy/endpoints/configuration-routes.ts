import { hostname } from 'node:os';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { GatewayState } from '../config/gateway-state.ts';
import type { GatewayMetrics } from '../observability/gateway-metrics.ts';
import { standaloneReplicas, withClusterView, type ClusterViewFetch } from '../console/cluster-view.ts';

// GET /v1/configuration — the running configuration, read-only, for the console and for
// operators debugging a route: providers (whether a key is set, never the key), saved
// configs, the model catalog, guardrails, guardrail policies, prompts, the state-file
// rate-limit policies, the API keys' ids and scopes, circuit-breaker states and the
// served state hash per replica (in a cluster, with the custom resource each item came from
// and its conditions: console/cluster-view.ts). Admin scope. Like the log routes, an `admin` key sees what its own
// workspace may use; only `org_admin` sees every workspace. Anything that looks like a
// credential is replaced by "[redacted]" wherever it sits (inline targets, webhooks).

const ADMIN = { config: { gatewayScope: 'admin' } } as const;
export const REDACTED = '[redacted]';

// Key names that hold credentials in routing configs, guardrails and provider options.
const SECRET_NAME = /(api_?key|apikey|secret|password|passwd|credential|private_?key|session_?token|access_?token|access_?key|service_?account|authorization|virtual_?key|bearer|cookie)/i;

export interface ConfigurationDeps {
  currentState(): GatewayState;
  metrics: GatewayMetrics;
  /** In a cluster: the operator's view (replicas, custom resources), asked with the caller's key. */
  clusterView?: ClusterViewFetch | undefined;
}

export function registerConfigurationRoutes(app: FastifyInstance, deps: ConfigurationDeps): void {
  app.get('/v1/configuration', ADMIN, async (request) => {
    const state = deps.currentState();
    const workspace = workspaceLimit(request);
    const description = {
      ...describeConfiguration(state, workspace, await breakerStates(deps.metrics)),
      // Whether GET /v1/logs/{id}/exchange exists (serve --log-bodies): the console asks it only then.
      request_log: { bodies: request.server.hasRoute({ method: 'GET', url: '/v1/logs/:id/exchange' }) },
    };
    if (deps.clusterView === undefined) {
      return { ...description, mode: 'standalone' as const, desired_hash: state.hash, replicas: standaloneReplicas(description.replica, state.hash, Date.now()), resources: null, cluster_error: null };
    }
    const apiKey = request.headers['x-gateway-api-key'];
    // The rest of the page does not wait on the control plane: its failure is one field.
    const cluster = await deps.clusterView({ apiKey: typeof apiKey === 'string' ? apiKey : '', traceId: request.gateway.traceId }).then(
      (view) => ({ view }),
      (error: unknown) => ({ error: error instanceof Error ? error.message.slice(0, 300) : 'the control plane did not answer' }),
    );
    return withClusterView(description, cluster);
  });
}

/** The served configuration as `workspace` (undefined: every workspace) may see it. Pure. */
export function describeConfiguration(state: GatewayState, workspace: string | undefined, breakers: ReadonlyArray<{ target: string; state: string }>) {
  const document = state.document;
  const visible = (workspaces: readonly string[] | undefined): boolean => workspace === undefined || workspaces === undefined || workspaces.includes(workspace);
  const configIds = new Set(document.configs.filter((entry) => visible(entry.workspaces)).map((entry) => entry.id));
  return {
    object: 'gateway.configuration' as const,
    state_hash: state.hash,
    replica: hostname(),
    workspace: workspace ?? null,
    providers: document.providers
      .filter((entry) => visible(entry.workspaces))
      .map((entry) => ({
        slug: entry.slug,
        provider: entry.provider,
        custom_host: entry.customHost ?? null,
        has_api_key: state.providersBySlug.get(entry.slug)?.apiKey !== undefined,
        forward_client_credential: entry.forwardClientCredential === true,
        options: redact(entry.options ?? {}),
        input_guardrails: entry.input_guardrails ?? [],
        output_guardrails: entry.output_guardrails ?? [],
        workspaces: entry.workspaces ?? null,
      })),
    configs: document.configs
      .filter((entry) => configIds.has(entry.id))
      .map((entry) => ({ id: entry.id, workspaces: entry.workspaces ?? null, config: redact(state.configs.get(entry.id)?.config ?? entry.config) })),
    models: document.models
      .filter((entry) => visible(entry.workspaces) && (entry.config === undefined || configIds.has(entry.config)))
      .map((entry) => ({ name: entry.name, aliases: entry.aliases ?? [], config: entry.config ?? null, target: entry.target ?? null, model: entry.model ?? entry.name })),
    guardrails: document.guardrails.map((entry) => redact(entry)),
    guardrail_policies: document.guardrailPolicies.map((entry) => redact(entry)),
    prompts: document.prompts.map((entry) => redact(entry)),
    mcp_servers: document.mcpServers
      .filter((server) => workspace === undefined || server.access === undefined || server.access.some((grant) => grant.workspaces?.includes(workspace) === true))
      .map((server) => ({
        name: server.name,
        transport: server.transport,
        // Origin and path only: a query string or user info may carry a token.
        url: server.url === undefined ? null : urlWithoutSecrets(server.url),
        header_names: Object.keys(server.headers ?? {}),
        forward_client_token: server.forwardClientToken,
        tools: redact(server.tools ?? null),
        workspaces: server.access === undefined ? null : [...new Set(server.access.flatMap((grant) => grant.workspaces ?? []))],
      })),
    usage_limit_policies: document.usageLimitPolicies
      .filter((policy) => workspace === undefined || policy.workspace_id === undefined || policy.workspace_id === workspace)
      .map((policy) => redact(policy)),
    rate_limit_policies: document.rateLimitPolicies
      .filter((policy) => workspace === undefined || policy.workspace_id === undefined || policy.workspace_id === workspace)
      .map((policy) => redact(policy)),
    api_keys: document.apiKeys
      .filter((entry) => workspace === undefined || entry.workspace === workspace)
      .map((entry) => ({ id: entry.id, workspace: entry.workspace, scopes: entry.scopes })),
    breakers: breakers.filter((entry) => workspace === undefined || configIds.has(entry.target.split(':')[0] ?? '')),
  };
}

/** A deep copy with every credential-looking field replaced (key names, not values, decide). */
export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (typeof value !== 'object' || value === null) return value;
  const copy: Record<string, unknown> = {};
  for (const [name, inner] of Object.entries(value)) {
    if (SECRET_NAME.test(name) && inner !== undefined && inner !== null) copy[name] = REDACTED;
    else if (/^headers$/i.test(name) && typeof inner === 'object' && inner !== null) copy[name] = Object.fromEntries(Object.keys(inner).map((header) => [header, REDACTED]));
    else copy[name] = redact(inner);
  }
  return copy;
}

function urlWithoutSecrets(raw: string): string {
  const url = URL.parse(raw);
  return url === null ? REDACTED : `${url.origin}${url.pathname}`;
}

/** The workspace a caller is confined to; undefined for the org_admin scope. */
function workspaceLimit(request: FastifyRequest): string | undefined {
  const key = request.gateway.apiKey;
  if (key?.scopes.has('org_admin') === true) return undefined;
  return key?.workspace ?? '';
}

const STATE_NAME: Readonly<Record<number, string>> = { 0: 'closed', 1: 'half-open', 2: 'open' };

/** Breakers that ever changed state (the gauge holds one series per target label). */
async function breakerStates(metrics: GatewayMetrics): Promise<Array<{ target: string; state: string }>> {
  const { values } = await metrics.circuitState.get();
  return values
    .filter((sample) => typeof sample.labels.target === 'string')
    .map((sample) => ({ target: String(sample.labels.target), state: STATE_NAME[sample.value] ?? 'closed' }))
    .slice(0, 1_000);
}
