import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { GatewayState } from '../../proxy/config/gateway-state.ts';
import type { CustomResource, RenderedStatus } from '../reconcile/resource-types.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { KubePolicyStore } from '../api/kube-policy-store.ts';
import { KubeUsageLimitStore } from '../api/kube-usage-limit-store.ts';
import { startOperatorApi, type OperatorApi } from '../api/operator-api-server.ts';
import { renderGatewayState, type RenderResult } from '../reconcile/render-gateway-state.ts';
import { serializeRenderedState, type SerializedState } from '../reconcile/serialize-state.ts';
import { KubeClient, isKubeApiError } from './kube-client.ts';
import { LeaderElector } from './leader-election.ts';
import { createOperatorMetrics, startMetricsServer, type OperatorMetrics } from './operator-metrics.ts';
import { applyRenderedState, type OwnerReference } from './output-writer.ts';
import { ProgrammedTracker } from './programmed-tracker.ts';
import { ResourceCache } from './resource-cache.ts';
import { StatusWriter } from './status-writer.ts';
import { BudgetSpendTracker, SPEND_CONDITION_TYPES } from './budget-spend-tracker.ts';
import type { BudgetStore } from '../../proxy/budgets/budget-store.ts';
import { WorkQueue } from './work-queue.ts';

// The operator process: informers on every replica (they feed the control-plane API and
// keep a warm cache), one leader (Lease) that renders the state into the ConfigMap and
// Secret and writes statuses. Every change enqueues the single key "render"; the queue
// collapses bursts and backs off on failure. A periodic resync re-applies the output, so a
// hand-edited or deleted ConfigMap is restored.

export interface OperatorOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  readonly logger: Logger;
  readonly identity: string;
  readonly configMapName?: string;
  readonly secretName?: string;
  readonly leaseName?: string;
  readonly leaseDurationMs?: number;
  readonly renewDeadlineMs?: number;
  readonly retryPeriodMs?: number;
  readonly metricsPort?: number;
  readonly metricsHost?: string;
  readonly apiPort?: number;
  readonly apiHost?: string;
  readonly egressAllow?: readonly string[];
  /** `egress.clientAllow` of the state: where hosts a request chooses may go (default: public only). */
  readonly egressClientAllow?: readonly string[];
  /**
   * Secrets no resource may reference even when labelled (the sealing key, store URLs);
   * the output Secret is always among them.
   */
  readonly protectedSecrets?: readonly string[];
  /** The operator's Deployment: owner of the output objects, so they are garbage-collected with it. */
  readonly ownerDeployment?: string | undefined;
  readonly relistIntervalMs?: number;
  readonly resyncIntervalMs?: number;
  /**
   * The proxy Service: when set, GatewayConfigs get a `Programmed` condition, True once every
   * ready replica behind it serves the config hash that carries their generation.
   */
  readonly proxyService?: string | undefined;
  /**
   * The proxies' shared budget store (REDIS_URL): UsageLimitPolicies get `status.spend` and
   * ThresholdReached / Exhausted from it, read every `spendIntervalMs` (default 30 s).
   */
  readonly budgetStoreUrl?: string | undefined;
  /** Instead of budgetStoreUrl (tests). */
  readonly budgetStore?: (Pick<BudgetStore, 'scan'> & { close?(): Promise<void> }) | undefined;
  readonly spendIntervalMs?: number;
}

export interface RunningOperator {
  readonly apiUrl: string;
  readonly metricsUrl: string;
  readonly metrics: OperatorMetrics;
  isLeader(): boolean;
  /** Hash of the state this replica last applied (leader only). */
  appliedHash(): string | undefined;
  close(): Promise<void>;
}

const KEY = 'render';

interface RenderView {
  readonly result: RenderResult;
  readonly serialized: SerializedState;
  readonly state: GatewayState;
}

export async function startOperator(options: OperatorOptions): Promise<RunningOperator> {
  const { logger, namespace } = options;
  const client = new KubeClient({ kubeConfig: options.kubeConfig });
  const metrics = createOperatorMetrics();
  const target = {
    namespace,
    configMapName: options.configMapName ?? 'aigateway-state',
    secretName: options.secretName ?? 'aigateway-credentials',
    owner: await ownerOf(client, namespace, options.ownerDeployment, logger),
  };
  const settings = {
    egressAllow: options.egressAllow ?? [],
    egressClientAllow: options.egressClientAllow ?? [],
    protectedSecrets: [...new Set([target.secretName, ...(options.protectedSecrets ?? [])])],
  };
  let view: RenderView | undefined;
  let applied: string | undefined;
  let closed = false;

  /** Renders the cache; throws when the result would not load in the proxy (a bug guard). */
  const render = (): RenderView => {
    const result = renderGatewayState(cache.snapshot(settings));
    const serialized = serializeRenderedState(result);
    const loaded = loadStateFromTexts({ state: serialized.stateYaml, credentials: serialized.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
    if (!loaded.ok) throw new Error(`rendered state would be rejected by the proxy: ${loaded.errors.join('; ')}`);
    return { result, serialized, state: loaded.state };
  };

  const statusWriter = new StatusWriter({ client, namespace, identity: options.identity, quietConditionTypes: SPEND_CONDITION_TYPES });
  const elector: LeaderElector = new LeaderElector({
    client,
    namespace,
    name: options.leaseName ?? 'aigateway-operator',
    identity: options.identity,
    owner: target.owner,
    leaseDurationMs: options.leaseDurationMs,
    renewDeadlineMs: options.renewDeadlineMs,
    retryPeriodMs: options.retryPeriodMs,
    logger,
    onStartedLeading: () => {
      metrics.isLeader.set(1);
      applied = undefined;
      queue.add(KEY);
      spend.poke(true);
    },
    onStoppedLeading: () => metrics.isLeader.set(0),
  });

  // GatewayConfig name → the generation every ready proxy replica was seen serving.
  const programmed = new Map<string, number>();
  const tracker =
    options.proxyService === undefined || options.proxyService === ''
      ? undefined
      : new ProgrammedTracker({
          client,
          namespace,
          serviceName: options.proxyService,
          active: () => elector.isLeader && !closed,
          // A reconcile writes the statuses (withProgrammed reads the snapshot).
          onChange(snapshot) {
            metrics.proxyReplicasServing.set(snapshot.hash === undefined ? 0 : snapshot.replicas.length);
            queue.add(KEY);
          },
        });
  // Served with a missing provider: the proxies skip those targets, which Programmed says too.
  const skippedTargetsNote = (status: RenderedStatus): string =>
    status.conditions.some((condition) => condition.type === 'ResolvedRefs' && condition.reason === 'ProviderNotFound')
      ? ' Targets naming a missing provider are skipped until it exists (see ResolvedRefs).'
      : '';
  const withProgrammed = (statuses: readonly RenderedStatus[]): readonly RenderedStatus[] => {
    if (tracker === undefined) return statuses;
    const live = new Set<string>();
    const served = tracker.snapshot.hash !== undefined && tracker.snapshot.hash === view?.serialized.hash;
    const out = statuses.map((status) => {
      if (status.kind !== 'GatewayConfig') return status;
      live.add(status.name);
      if (served && status.rendered) programmed.set(status.name, status.generation);
      if (!programmed.has(status.name) && programmedBefore(cache.get('GatewayConfig', status.name), status.generation)) {
        programmed.set(status.name, status.generation); // a new leader keeps what the last one confirmed
      }
      const condition = !status.rendered
        ? { type: 'Programmed' as const, status: 'False' as const, reason: 'NotRendered', message: 'Not part of the rendered state (see Ready).' }
        : programmed.get(status.name) === status.generation
          ? { type: 'Programmed' as const, status: 'True' as const, reason: 'Programmed', message: `Every ready proxy replica serves this generation.${skippedTargetsNote(status)}` }
          : { type: 'Programmed' as const, status: 'False' as const, reason: 'Pending', message: 'Waiting for every ready proxy replica to serve this generation.' };
      return { ...status, conditions: [...status.conditions, condition] };
    });
    for (const name of programmed.keys()) if (!live.has(name)) programmed.delete(name);
    return out;
  };

  // Budget spend in UsageLimitPolicy status (the leader reads the shared store).
  const budgetStore = options.budgetStore ?? (options.budgetStoreUrl === undefined || options.budgetStoreUrl === '' ? undefined : await openBudgetStore(options.budgetStoreUrl));
  const spend = new BudgetSpendTracker({
    client,
    namespace,
    identity: options.identity,
    store: budgetStore,
    resources: () => cache.resources('UsageLimitPolicy'),
    active: () => elector.isLeader && !closed && cache.synced,
    onChange: () => queue.add(KEY),
    intervalMs: options.spendIntervalMs,
  });
  const withSpend = (statuses: readonly RenderedStatus[]): readonly RenderedStatus[] =>
    statuses.map((status) => {
      if (status.kind !== 'UsageLimitPolicy' || !status.rendered) return status;
      const conditions = spend.conditionsFor(status.name);
      return conditions.length === 0 ? status : { ...status, conditions: [...status.conditions, ...conditions] };
    });

  const reconcile = async (): Promise<void> => {
    if (!elector.isLeader || closed) return;
    if (!cache.synced) {
      logger.info({ pending: cache.pending() }, 'waiting for informers before rendering');
      queue.addAfter(KEY, 1_000);
      return;
    }
    const stopTimer = metrics.reconcileDuration.startTimer();
    let stage = 'render';
    try {
      view = render();
      const { result, serialized } = view;
      if (serialized.hash !== applied) {
        stage = 'apply';
        await applyRenderedState(client, target, serialized);
        applied = serialized.hash;
        logger.info({ config_hash: serialized.hash, configmap: target.configMapName }, 'rendered state applied');
      }
      tracker?.expect(serialized.hash);
      stage = 'status';
      const writes = await statusWriter.write(withSpend(withProgrammed(result.statuses)), (status) => cache.get(status.kind, status.name));
      metrics.statusWrites.inc(writes);
      metrics.resources.reset();
      for (const status of result.statuses) {
        const ready = status.conditions.find((condition) => condition.type === 'Ready')?.status ?? 'Unknown';
        metrics.resources.inc({ kind: status.kind, ready });
      }
      metrics.reconciles.inc({ result: 'success' });
    } catch (error) {
      metrics.reconciles.inc({ result: 'error' });
      metrics.reconcileErrors.inc({ stage });
      throw error;
    } finally {
      stopTimer();
    }
  };

  const queue = new WorkQueue({
    process: reconcile,
    onDepth: (depth) => metrics.queueDepth.set(depth),
    onError: (key, error, retryInMs) => logger.error({ key, err: { message: (error as Error).message }, retry_ms: retryInMs }, 'reconcile failed'),
  });

  let refreshScheduled = false;
  const cache = new ResourceCache({
    client,
    namespace,
    logger,
    outputSecretName: target.secretName,
    relistIntervalMs: options.relistIntervalMs,
    onRelist: (informer, reason) => metrics.informerRelists.inc({ informer, reason }),
    onChange: () => {
      queue.add(KEY);
      spend.poke();
      // Followers serve the API too: refresh their view once per burst of changes.
      if (refreshScheduled) return;
      refreshScheduled = true;
      setImmediate(() => {
        refreshScheduled = false;
        if (!cache.synced) return;
        try {
          view = render();
        } catch (error) {
          logger.error({ err: { message: (error as Error).message } }, 'render failed');
        }
      });
    },
  });

  const policyStore = new KubePolicyStore({ client, namespace, resources: () => cache.resources('RateLimitPolicy') });
  const usageLimitStore = new KubeUsageLimitStore({ client, namespace, resources: () => cache.resources('UsageLimitPolicy') });
  let api: OperatorApi | undefined;
  let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | undefined;
  try {
    metricsServer = await startMetricsServer(metrics, () => cache.synced, options.metricsPort ?? 9090, options.metricsHost ?? '0.0.0.0');
    api = await startOperatorApi({
      currentState: () => (cache.synced ? view?.state : undefined),
      policyStore,
      statePolicies: () => policyStore.statePolicies(),
      usageLimits: { store: usageLimitStore, statePolicies: () => usageLimitStore.statePolicies() },
      clusterView: {
        namespace,
        rendered: () => (cache.synced && view !== undefined ? { state: view.state, hash: view.serialized.hash, statuses: view.result.statuses } : undefined),
        resources: (kind) => cache.resources(kind),
        replicas:
          tracker === undefined
            ? undefined
            : async () => {
                const { snapshot, checkedAtMs } = await tracker.latest();
                return { replicas: snapshot.replicas, checkedAtMs };
              },
      },
      logger,
      port: options.apiPort ?? 8080,
      host: options.apiHost ?? '0.0.0.0',
    });
  } catch (error) {
    metricsServer?.server.close();
    await budgetStore?.close?.();
    await client.close();
    throw error;
  }

  cache.start();
  elector.start();
  tracker?.start();
  spend.start();
  const resync = setInterval(() => {
    applied = undefined;
    queue.add(KEY);
  }, options.resyncIntervalMs ?? 60_000);
  resync.unref();
  logger.info({ namespace, identity: options.identity, api: api.url, metrics: metricsServer.url }, 'aigateway operator started');

  const runningApi = api;
  const runningMetrics = metricsServer;
  return {
    apiUrl: runningApi.url,
    metricsUrl: runningMetrics.url,
    metrics,
    isLeader: () => elector.isLeader,
    appliedHash: () => applied,
    async close() {
      closed = true;
      clearInterval(resync);
      tracker?.stop();
      spend.stop();
      await queue.stop();
      await elector.stop();
      await cache.stop();
      await runningApi.close();
      await new Promise<void>((resolve) => runningMetrics.server.close(() => resolve()));
      await budgetStore?.close?.();
      await client.close();
    },
  };
}

/** A read-only use of the proxies' Redis budget counters (scan only; calls may take 2 s). */
async function openBudgetStore(url: string): Promise<Pick<BudgetStore, 'scan' | 'close'>> {
  const { RedisBudgetStore } = await import('../../proxy/budgets/redis-budget-store.ts');
  return new RedisBudgetStore({ url, commandTimeoutMs: 2_000 });
}

async function ownerOf(client: KubeClient, namespace: string, deployment: string | undefined, logger: Logger): Promise<OwnerReference | undefined> {
  if (deployment === undefined || deployment === '') return undefined;
  try {
    const found = await client.request<{ metadata: { uid: string } }>('GET', `/apis/apps/v1/namespaces/${namespace}/deployments/${deployment}`);
    return { apiVersion: 'apps/v1', kind: 'Deployment', name: deployment, uid: found.metadata.uid };
  } catch (error) {
    const reason = isKubeApiError(error) ? `${error.status} ${error.reason ?? ''}` : (error as Error).message;
    logger.warn({ deployment, reason }, 'owner Deployment not found; the rendered ConfigMap and Secret will not be garbage-collected with it');
    return undefined;
  }
}

/** Whether the resource already says Programmed=True for this generation (written by an earlier leader). */
function programmedBefore(resource: CustomResource | undefined, generation: number): boolean {
  const conditions = (resource?.status as { conditions?: Array<{ type?: string; status?: string; observedGeneration?: number }> } | undefined)?.conditions;
  return (conditions ?? []).some((condition) => condition.type === 'Programmed' && condition.status === 'True' && condition.observedGeneration === generation);
}
