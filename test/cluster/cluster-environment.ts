// The cluster suite's environment: a real single-node cluster (../shared/tools/k8s-test-cluster.sh
// start-node: kubelet, containerd, kube-proxy, bridge network, cluster DNS) and kubectl + helm
// from test/e2e/tools.sh. When it is not there, `clusterEnvironment()` says why and the suite
// skips with that reason. test/cluster/ci-node.sh brings it up in CI.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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
