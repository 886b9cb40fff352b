import type { KubeClient } from './kube-client.ts';
import { isKubeApiError } from './kube-client.ts';
import { PollingLoop } from './polling-loop.ts';

// Which config hash every ready proxy replica serves. The ready replicas are the ready
// endpoints of the proxy Service's EndpointSlices (what clients are routed to; v1 Endpoints
// is deprecated since Kubernetes 1.33 and truncated at 1,000 addresses); each answers
// GET /ready with the hash it serves. The leader asks while a new hash is pending (every
// `pendingIntervalMs`) and now and then afterwards, and calls `onChange` when the answer
// moves, so GatewayConfigs get `Programmed` only once their generation is really served.

export interface ProxyReplicaReport {
  readonly address: string;
  /** The Pod behind the address (the endpoint's targetRef), when the slice names one. */
  readonly pod?: string | undefined;
  /** The hash the replica serves, or undefined when it did not answer. */
  readonly hash: string | undefined;
}

export interface ServedSnapshot {
  /** The hash every ready replica serves, when they agree (and there is at least one). */
  readonly hash: string | undefined;
  readonly replicas: readonly ProxyReplicaReport[];
}

export interface ProgrammedTrackerOptions {
  readonly client: KubeClient;
  readonly namespace: string;
  /** The proxy Service (its EndpointSlices list the ready replicas). */
  readonly serviceName: string;
  /** Only the leader asks. */
  readonly active: () => boolean;
  readonly onChange: (snapshot: ServedSnapshot) => void;
  readonly pendingIntervalMs?: number;
  readonly settledIntervalMs?: number;
  /** GET http://<address>/ready → config_hash (tests replace it). */
  readonly fetchHash?: (origin: string) => Promise<string | undefined>;
}

interface EndpointSliceList {
  items?: Array<{
    addressType?: string;
    endpoints?: Array<{ addresses?: string[]; conditions?: { ready?: boolean | null }; targetRef?: { kind?: string; name?: string } | null }>;
    ports?: Array<{ name?: string; port?: number }> | null;
  }>;
}

export class ProgrammedTracker {
  readonly #options: ProgrammedTrackerOptions;
  #wanted: string | undefined;
  #last: ServedSnapshot = { hash: undefined, replicas: [] };
  readonly #loop: PollingLoop;
  /** The last answer of any ask (the leader's loop or latest()), with when it was asked. */
  #seen: { snapshot: ServedSnapshot; checkedAtMs: number } | undefined;
  #asking: Promise<ServedSnapshot> | undefined;

  constructor(options: ProgrammedTrackerOptions) {
    this.#options = options;
    this.#loop = new PollingLoop(
      () => this.#pass(),
      () => (this.#wanted !== undefined && this.#last.hash === this.#wanted ? (options.settledIntervalMs ?? 5_000) : (options.pendingIntervalMs ?? 200)),
      { stopped: false },
    );
  }

  /** The hash the leader just applied: ask the replicas until they serve it. */
  expect(hash: string): void {
    if (hash === this.#wanted) return;
    this.#wanted = hash;
    this.#loop.schedule(0);
  }

  /** Re-checks now (e.g. after the EndpointSlices may have changed). */
  poke(): void {
    this.#loop.schedule(0);
  }

  get snapshot(): ServedSnapshot {
    return this.#last;
  }

  /**
   * What the replicas serve, asked at most once per `maxAgeMs` and one ask at a time, on any
   * operator replica (followers too): the console's view of the replicas (operator/api).
   */
  async latest(maxAgeMs = 5_000): Promise<{ snapshot: ServedSnapshot; checkedAtMs: number }> {
    const seen = this.#seen;
    if (seen !== undefined && Date.now() - seen.checkedAtMs < maxAgeMs) return seen;
    this.#asking ??= this.#ask().finally(() => {
      this.#asking = undefined;
    });
    await this.#asking;
    return this.#seen ?? { snapshot: { hash: undefined, replicas: [] }, checkedAtMs: Date.now() };
  }

  start(): void {
    this.#loop.start();
  }

  stop(): void {
    this.#loop.stop();
  }

  /** One pass of the leader's loop; a throw (API server or a replica briefly unreachable) is retried next pass. */
  async #pass(): Promise<void> {
    if (!this.#options.active()) return;
    const next = await this.#ask();
    if (!sameSnapshot(next, this.#last)) {
      this.#last = next;
      this.#options.onChange(next);
    }
  }

  #sliceVersion: 'v1' | 'v1beta1' | undefined;

  #sliceVersions(): ReadonlyArray<'v1' | 'v1beta1'> {
    return this.#sliceVersion === 'v1beta1' ? ['v1beta1', 'v1'] : ['v1', 'v1beta1'];
  }

  async #ask(): Promise<ServedSnapshot> {
    let slices: EndpointSliceList | undefined;
    const query = `namespaces/${this.#options.namespace}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${this.#options.serviceName}`)}`;
    // discovery.k8s.io/v1 is served from Kubernetes 1.21; older clusters have the same fields
    // under v1beta1 (the version that answered is remembered).
    for (const version of this.#sliceVersions()) {
      try {
        slices = await this.#options.client.request<EndpointSliceList>('GET', `/apis/discovery.k8s.io/${version}/${query}`, { timeoutMs: 2_000 });
        this.#sliceVersion = version;
        break;
      } catch (error) {
        if (!isKubeApiError(error, 404)) throw error;
      }
    }
    if (slices === undefined) return { hash: undefined, replicas: [] };
    // A replica may appear in several slices (one per address type or port set): count it once.
    const unique = new Map<string, string | undefined>();
    for (const slice of slices.items ?? []) {
      if (slice.addressType === 'FQDN') continue;
      const port = slice.ports?.find((candidate) => candidate.name === 'http') ?? slice.ports?.[0];
      if (port?.port === undefined) continue;
      for (const endpoint of slice.endpoints ?? []) {
        // `ready` unset means ready (the API's documented default).
        if (endpoint.conditions?.ready === false) continue;
        const pod = endpoint.targetRef?.kind === 'Pod' ? endpoint.targetRef.name : undefined;
        for (const ip of endpoint.addresses ?? []) unique.set(`${ip.includes(':') ? `[${ip}]` : ip}:${port.port}`, pod);
      }
    }
    const origins = [...unique.keys()];
    origins.sort();
    const fetchHash = this.#options.fetchHash ?? fetchReadyHash;
    const replicas = await Promise.all(origins.map(async (address) => ({ address, pod: unique.get(address), hash: await fetchHash(address).catch(() => undefined) })));
    const hashes = new Set(replicas.map((replica) => replica.hash));
    const only = hashes.size === 1 ? [...hashes][0] : undefined;
    const snapshot = { hash: replicas.length > 0 ? only : undefined, replicas };
    this.#seen = { snapshot, checkedAtMs: Date.now() };
    return snapshot;
  }
}

async function fetchReadyHash(address: string): Promise<string | undefined> {
  const response = await fetch(`http://${address}/ready`, { signal: AbortSignal.timeout(1_000) });
  if (!response.ok) return undefined;
  const body = (await response.json()) as { config_hash?: unknown };
  return typeof body.config_hash === 'string' ? body.config_hash : undefined;
}

function sameSnapshot(a: ServedSnapshot, b: ServedSnapshot): boolean {
  if (a.hash !== b.hash || a.replicas.length !== b.replicas.length) return false;
  return a.replicas.every((replica, index) => replica.address === b.replicas[index]?.address && replica.hash === b.replicas[index]?.hash);
}
