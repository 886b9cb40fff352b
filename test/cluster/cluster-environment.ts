// The cluster suite's environment: a real single-node cluster (../shared/tools/k8s-test-cluster.sh
// start-node: kubelet, containerd, kube-proxy, bridge network, cluster DNS) and kubectl + helm
// from test/e2e/tools.sh. When it is not there, `clusterEnvironment()` says why and the suite
// skips with that reason. test/cluster/ci-node.sh brings it up in CI.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { ROOT, run, type CommandResult, type RunOptions } from '../e2e/e2e-environment.ts';

const DEFAULT_KUBECONFIG = '/var/tmp/k8s-test-cluster/run/kubeconfig';

export interface ClusterEnvironment {
  readonly kubeconfig: string;
  /** ../shared/tools/k8s-test-cluster.sh */
  readonly script: string;
  kubectl(args: readonly string[], options?: RunOptions): Promise<CommandResult>;
  helm(args: readonly string[], options?: RunOptions): Promise<CommandResult>;
  /** The cluster script (image builds); as root. */
  cluster(args: readonly string[], options?: RunOptions): Promise<CommandResult>;
  podman(args: readonly string[], options?: RunOptions): Promise<CommandResult>;
}

export function clusterScriptPath(): string {
  return process.env['AIGW_K8S_CLUSTER_SCRIPT'] || resolve(ROOT, '..', 'shared', 'tools', 'k8s-test-cluster.sh');
}

/** The environment, or the reason the suite skips. */
export async function clusterEnvironment(): Promise<ClusterEnvironment | string> {
  const forced = process.env['AIGW_CLUSTER_SKIP_REASON'];
  if (forced !== undefined && forced !== '') return forced;
  if (process.getuid?.() !== 0) return 'the cluster suite needs root (containerd, podman, iptables)';
  const script = clusterScriptPath();
  if (!existsSync(script)) return `cluster script not found: ${script}`;
  const kubeconfig = process.env['KUBECONFIG'] || DEFAULT_KUBECONFIG;
  if (!existsSync(kubeconfig)) return `no test cluster: ${kubeconfig} does not exist (run ${script} build-node && … start-node)`;
  const tools = spawnSync(join(ROOT, 'test', 'e2e', 'tools.sh'), { encoding: 'utf8', timeout: 300_000 });
  if (tools.status !== 0) return `kubectl/helm unavailable: test/e2e/tools.sh failed: ${(tools.stderr ?? '').trim().split('\n').at(-1)}`;
  const binDir = tools.stdout.trim().split('\n').at(-1) ?? '';
  const env = { KUBECONFIG: kubeconfig };
  const kubectl = (args: readonly string[], options: RunOptions = {}) => run(join(binDir, 'kubectl'), args, { ...options, env: { ...env, ...options.env } });
  const helm = (args: readonly string[], options: RunOptions = {}) => run(join(binDir, 'helm'), args, { ...options, env: { ...env, ...options.env } });
  const nodes = await kubectl(['get', 'nodes', '-o', 'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}'], { allowFailure: true, timeoutMs: 10_000 });
  if (nodes.code !== 0 || !nodes.stdout.includes('True')) {
    return `no Ready node in the test cluster (run ${script} start-node): ${(nodes.stderr || nodes.stdout).trim().slice(0, 200)}`;
  }
  return {
    kubeconfig,
    script,
    kubectl,
    helm,
    cluster: (args, options = {}) => run('bash', [script, ...args], { timeoutMs: 600_000, ...options }),
    podman: (args, options = {}) => run('podman', ['--runtime', 'runc', '--cgroup-manager', 'cgroupfs', ...args], options),
  };
}

/** p-th percentile (nearest rank) of the samples. */
export function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank))] ?? Number.NaN;
}

/**
 * `k8s-test-cluster.sh image`; its final check (`ctr images ls -q | grep -q` under pipefail)
 * can fail by SIGPIPE although the import worked: then the node's image list decides.
 */
export async function buildImage(env: ClusterEnvironment, tag: string): Promise<void> {
  // AIGW_CLUSTER_BUILD_DIR: build from another checkout (e.g. a clean `git archive HEAD`
  // beside a shared working tree); CI builds its own clean clone.
  const built = await env.cluster(['image', process.env['AIGW_CLUSTER_BUILD_DIR'] || ROOT, tag], { allowFailure: true });
  if (built.code === 0) return;
  const work = process.env['WORK'] ?? '/var/tmp/k8s-test-cluster';
  const listed = await run('ctr', ['--address', join(work, 'node', 'containerd.sock'), '--namespace', 'k8s.io', 'images', 'ls', '-q'], { allowFailure: true });
  assert.ok(built.stderr.includes('is not in containerd after the import') && listed.stdout.split('\n').includes(tag), `image ${tag}: ${built.stderr.slice(-2000)}`);
}

/** The node's InternalIP, where pods reach a forwarder this process opens. */
export async function nodeAddress(env: ClusterEnvironment): Promise<string> {
  const nodeIp = (await env.kubectl(['get', 'nodes', '-o', 'jsonpath={.items[0].status.addresses[?(@.type=="InternalIP")].address}'])).stdout.trim();
  assert.match(nodeIp, /^\d+\.\d+\.\d+\.\d+$/, 'the node IP');
  return nodeIp;
}

export interface Forwarder {
  /** host:port on the node IP. */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * A TCP forwarder on the node IP to one of the machine's own services (PostgreSQL, Redis on
 * 127.0.0.1): the node cannot pull their images, so pods reach the machine's through it.
 * Port 0; close() ends it and every connection through it.
 */
export async function openForwarder(nodeIp: string, targetPort: number): Promise<Forwarder> {
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  };
  const forwarder = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    track(client);
    track(upstream);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    forwarder.once('error', reject);
    forwarder.listen(0, nodeIp, () => resolve());
  });
  return {
    address: `${nodeIp}:${(forwarder.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        forwarder.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}
