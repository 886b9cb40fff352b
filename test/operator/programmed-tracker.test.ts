// Which config hash every ready proxy replica serves: the proxy Service's EndpointSlices (ready
// endpoints only, each address once) and each replica's GET /ready, asked by the leader only.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { KubeClient } from '../../operator/k8s/kube-client.ts';
import { KubeApiError } from '../../operator/k8s/kube-client.ts';
import { ProgrammedTracker, type ServedSnapshot } from '../../operator/k8s/programmed-tracker.ts';
import { eventually } from '../helpers/eventually.ts';

function fakeClient(endpoints: () => unknown): { client: KubeClient; paths: string[] } {
  const paths: string[] = [];
  const client = {
    async request(method: string, path: string) {
      paths.push(`${method} ${path}`);
      const answer = endpoints();
      if (answer instanceof Error) throw answer;
      return answer;
    },
  } as unknown as KubeClient;
  return { client, paths };
}

// The Service has a metrics port too: the tracker must pick `http`. A terminating replica
// (ready: false) and an address listed by two slices (e.g. mid-update) are not extra replicas.
const endpointsOf = (ips: string[]) => ({
  items: [
    {
      addressType: 'IPv4',
      ports: [{ name: 'metrics', port: 9090 }, { name: 'http', port: 8787 }],
      endpoints: [...ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })), { addresses: ['10.0.0.9'], conditions: { ready: false } }],
    },
    { addressType: 'IPv4', ports: [{ name: 'http', port: 8787 }], endpoints: ips.slice(0, 1).map((ip) => ({ addresses: [ip] })) },
  ],
});

describe('ProgrammedTracker', () => {
  test('reports a hash only when every ready replica serves it, and asks only the ready addresses of the proxy Service', async () => {
    const served = new Map([['10.0.0.1:8787', 'old'], ['10.0.0.2:8787', 'old']]);
    const { client, paths } = fakeClient(() => endpointsOf(['10.0.0.2', '10.0.0.1']));
    const snapshots: ServedSnapshot[] = [];
    const tracker = new ProgrammedTracker({
      client,
      namespace: 'team-a',
      serviceName: 'aigw-aigateway-proxy',
      active: () => true,
      onChange: (snapshot) => snapshots.push(snapshot),
      pendingIntervalMs: 5,
      settledIntervalMs: 5,
      fetchHash: async (address) => served.get(address),
    });
    tracker.start();
    tracker.expect('new');
    await eventually(() => tracker.snapshot.hash === 'old', 'both replicas on the old hash');
    assert.deepEqual(paths[0], 'GET /apis/discovery.k8s.io/v1/namespaces/team-a/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3Daigw-aigateway-proxy');
    assert.equal(tracker.snapshot.replicas.length, 2);
    served.set('10.0.0.1:8787', 'new');
    await eventually(() => snapshots.some((snapshot) => snapshot.hash === undefined && snapshot.replicas.length === 2), 'a mixed snapshot');
    assert.equal(tracker.snapshot.hash, undefined, 'replicas disagree: nothing is served everywhere');
    served.set('10.0.0.2:8787', 'new');
    await eventually(() => tracker.snapshot.hash === 'new', 'both on the new hash');
    assert.deepEqual(tracker.snapshot.replicas.map((replica) => replica.address), ['10.0.0.1:8787', '10.0.0.2:8787']);
    tracker.stop();
  });

  test('a replica that does not answer, no ready replica at all, or a missing Service means not served; followers never ask', async () => {
    let answer: unknown = endpointsOf(['10.0.0.1', '10.0.0.3']);
    const { client, paths } = fakeClient(() => answer);
    let leader = false;
    const tracker = new ProgrammedTracker({
      client,
      namespace: 'ns',
      serviceName: 'proxy',
      active: () => leader,
      onChange: () => undefined,
      pendingIntervalMs: 5,
      fetchHash: async (address) => (address.startsWith('10.0.0.3') ? Promise.reject(new Error('ECONNREFUSED')) : 'h1'),
    });
    tracker.start();
    tracker.expect('h1');
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(paths.length, 0, 'a follower does not ask');
    leader = true;
    tracker.poke();
    await eventually(() => tracker.snapshot.replicas.length === 2, 'the replicas asked');
    assert.equal(tracker.snapshot.hash, undefined);
    answer = { items: [] };
    await eventually(() => tracker.snapshot.replicas.length === 0, 'no ready replica');
    assert.equal(tracker.snapshot.hash, undefined);
    answer = new KubeApiError(404, 'NotFound', 'endpoints "proxy" not found');
    tracker.poke();
    await new Promise((resolve) => setTimeout(resolve, 30));
    assert.equal(tracker.snapshot.hash, undefined);
    tracker.stop();
  });
  test('a cluster that serves EndpointSlices only as discovery.k8s.io/v1beta1 (Kubernetes before 1.21) is read there', async () => {
    const paths: string[] = [];
    const client = {
      async request(method: string, path: string) {
        paths.push(path);
        if (path.startsWith('/apis/discovery.k8s.io/v1/')) throw new KubeApiError(404, 'NotFound', 'the server could not find the requested resource');
        return endpointsOf(['10.0.0.1']);
      },
    } as unknown as KubeClient;
    const tracker = new ProgrammedTracker({
      client,
      namespace: 'ns',
      serviceName: 'proxy',
      active: () => true,
      onChange: () => undefined,
      pendingIntervalMs: 5,
      settledIntervalMs: 5,
      fetchHash: async () => 'h1',
    });
    tracker.start();
    tracker.expect('h1');
    await eventually(() => tracker.snapshot.hash === 'h1', 'served, read from v1beta1');
    await eventually(() => paths.filter((path) => path.includes('/v1beta1/')).length >= 2, 'asked again');
    tracker.stop();
    // Once v1beta1 answered, later rounds go there first.
    const afterFirst = paths.slice(2);
    assert.ok(afterFirst.length > 0 && afterFirst.every((path) => path.includes('/v1beta1/')), afterFirst.join(', '));
  });
});
