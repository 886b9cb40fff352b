import { CREDENTIALS_FILE, STATE_FILE, type SerializedState } from '../reconcile/serialize-state.ts';
import type { KubeClient } from './kube-client.ts';

// Writes the rendered state: the ConfigMap (state YAML + content hash annotation) and the
// Secret (credentials YAML), by server-side apply with our field manager, so fields that
// other tools own on these objects are left alone. The Secret goes first: a proxy never
// reads a state that names credentials its Secret does not have yet.

export const FIELD_MANAGER = 'aigateway-operator';
export const HASH_ANNOTATION = 'aigateway.dev/config-hash';

export interface OwnerReference {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

export interface OutputTarget {
  readonly namespace: string;
  readonly configMapName: string;
  readonly secretName: string;
  /** Owner for garbage collection (the operator's Deployment), when known. */
  readonly owner?: OwnerReference | undefined;
}

const LABELS = { 'app.kubernetes.io/managed-by': FIELD_MANAGER, 'app.kubernetes.io/part-of': 'aigateway' };

/** The two objects, as server-side apply bodies. */
export function outputObjects(target: OutputTarget, rendered: SerializedState): { configMap: object; secret: object } {
  const metadata = (name: string) => ({
    name,
    namespace: target.namespace,
    labels: LABELS,
    annotations: { [HASH_ANNOTATION]: rendered.hash },
    ...(target.owner === undefined ? {} : { ownerReferences: [{ ...target.owner, controller: true }] }),
  });
  return {
    configMap: { apiVersion: 'v1', kind: 'ConfigMap', metadata: metadata(target.configMapName), data: { [STATE_FILE]: rendered.stateYaml } },
    secret: {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: metadata(target.secretName),
      data: { [CREDENTIALS_FILE]: Buffer.from(rendered.credentialsYaml).toString('base64') },
    },
  };
}

/** Applies the Secret, then the ConfigMap. */
export async function applyRenderedState(client: KubeClient, target: OutputTarget, rendered: SerializedState): Promise<void> {
  const { configMap, secret } = outputObjects(target, rendered);
  const base = `/api/v1/namespaces/${target.namespace}`;
  const apply = { query: { fieldManager: FIELD_MANAGER, force: true }, contentType: 'application/apply-patch+yaml' };
  await client.request('PATCH', `${base}/secrets/${target.secretName}`, { ...apply, body: secret });
  await client.request('PATCH', `${base}/configmaps/${target.configMapName}`, { ...apply, body: configMap });
}
