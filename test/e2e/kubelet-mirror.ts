// Mirrors the operator's ConfigMap and Secret into a directory the way the kubelet updates
// a projected volume: every update is written into a fresh timestamped directory, then the
// `..data` symlink is swapped atomically (symlink to a temp name + rename), and the visible
// files are symlinks through `..data`. Records the time of every swap.
import { mkdir, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { pino } from 'pino';
import { Informer } from '../../operator/k8s/informer.ts';
import { KubeClient, loadKubeConfig } from '../../operator/k8s/kube-client.ts';
import { HASH_ANNOTATION } from '../../operator/k8s/output-writer.ts';
import { CREDENTIALS_FILE, STATE_FILE } from '../../operator/reconcile/serialize-state.ts';

interface ConfigMapObject {
  metadata: { name: string; resourceVersion?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

export interface Swap {
  readonly at: number;
  readonly hash: string | undefined;
  readonly state: string;
}

export interface KubeletMirror {
  readonly dir: string;
  readonly configPath: string;
  readonly credentialsPath: string;
  readonly swaps: readonly Swap[];
  /** The first swap whose state text satisfies `predicate`. */
  swapWhere(predicate: (state: string) => boolean): Swap | undefined;
  close(): Promise<void>;
}

export async function startKubeletMirror(options: { kubeconfig: string; namespace: string; configMapName: string; secretName: string; dir: string }): Promise<KubeletMirror> {
  const client = new KubeClient({ kubeConfig: loadKubeConfig(options.kubeconfig) });
  const logger = pino({ level: 'silent' });
  const swaps: Swap[] = [];
  await mkdir(options.dir, { recursive: true });
  let writing = Promise.resolve();
  let lastKey = '';

  const sync = (): void => {
    const configMap = configMaps.get(options.configMapName);
    const secret = secrets.get(options.secretName);
    if (configMap === undefined || secret === undefined) return;
    const key = `${configMap.metadata.resourceVersion}/${secret.metadata.resourceVersion}`;
    if (key === lastKey) return;
    lastKey = key;
    const state = configMap.data?.[STATE_FILE] ?? '';
    const credentials = Buffer.from(secret.data?.[CREDENTIALS_FILE] ?? '', 'base64').toString('utf8');
    writing = writing.then(async () => {
      const generation = `..${new Date().toISOString().replace(/[:.]/g, '_')}.${randomBytes(4).toString('hex')}`;
      await mkdir(join(options.dir, generation));
      await writeFile(join(options.dir, generation, STATE_FILE), state);
      await writeFile(join(options.dir, generation, CREDENTIALS_FILE), credentials);
      const previous = await readlink(join(options.dir, '..data')).catch(() => undefined);
      await symlink(generation, join(options.dir, '..data_tmp'));
      await rename(join(options.dir, '..data_tmp'), join(options.dir, '..data'));
      for (const file of [STATE_FILE, CREDENTIALS_FILE]) {
        await symlink(join('..data', file), join(options.dir, file)).catch(() => undefined);
      }
      swaps.push({ at: Date.now(), hash: configMap.metadata.annotations?.[HASH_ANNOTATION], state });
      if (previous !== undefined) await rm(join(options.dir, previous), { recursive: true, force: true });
    });
  };

  const configMaps = new Informer<ConfigMapObject>({
    client,
    logger,
    name: 'mirror-configmap',
    path: `/api/v1/namespaces/${options.namespace}/configmaps`,
    fieldSelector: `metadata.name=${options.configMapName}`,
    onChange: sync,
  });
  const secrets = new Informer<ConfigMapObject>({
    client,
    logger,
    name: 'mirror-secret',
    path: `/api/v1/namespaces/${options.namespace}/secrets`,
    fieldSelector: `metadata.name=${options.secretName}`,
    onChange: sync,
  });
  configMaps.start();
  secrets.start();

  return {
    dir: options.dir,
    configPath: join(options.dir, STATE_FILE),
    credentialsPath: join(options.dir, CREDENTIALS_FILE),
    swaps,
    swapWhere: (predicate) => swaps.find((swap) => predicate(swap.state)),
    async close() {
      await configMaps.stop();
      await secrets.stop();
      await writing;
      await client.close();
    },
  };
}
