// The informer against a scripted API server: it relists on 410 Gone, restarts after an
// error, resumes a watch from the last resourceVersion, and applies ADDED/MODIFIED/DELETED.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Informer } from '../../operator/k8s/informer.ts';
import { KubeClient } from '../../operator/k8s/kube-client.ts';
import { eventually } from '../helpers/eventually.ts';

interface Item {
  metadata: { name: string; resourceVersion: string };
}

type WatchScript = (response: ServerResponse, resourceVersion: string | null) => void;

describe('Informer', () => {
  let server: Server;
  let client: KubeClient;
  const requests: string[] = [];
  let listItems: Item[] = [];
  let listStatus = 200;
  let listVersion = '10';
  const watches: WatchScript[] = [];
  const openStreams = new Set<ServerResponse>();

  before(async () => {
    server = createServer((request, response) => {
      const url = new URL(request.url ?? '/', 'http://x');
      requests.push(`${url.searchParams.get('watch') === 'true' ? 'WATCH' : 'LIST'} rv=${url.searchParams.get('resourceVersion') ?? ''}`);
      if (url.searchParams.get('watch') !== 'true') {
        if (listStatus !== 200) {
          response.writeHead(listStatus, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', reason: 'InternalError', message: 'boom' }));
          listStatus = 200;
          return;
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ metadata: { resourceVersion: listVersion }, items: listItems }));
        return;
      }
      response.writeHead(200, { 'content-type': 'application/json' });
      openStreams.add(response);
      response.on('close', () => openStreams.delete(response));
      const script = watches.shift();
      if (script === undefined) return; // stays open
      script(response, url.searchParams.get('resourceVersion'));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    assert.ok(address !== null && typeof address === 'object');
    const config = new KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'c', server: `http://127.0.0.1:${address.port}`, skipTLSVerify: true }],
      users: [{ name: 'u', token: 'test-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    client = new KubeClient({ kubeConfig: config });
  });

  after(async () => {
    for (const stream of openStreams) stream.destroy();
    await client.close();
    server.close();
  });

  test('lists, applies watch events, relists on 410 Gone and resumes from the newest resourceVersion', async () => {
    requests.length = 0;
    listItems = [{ metadata: { name: 'a', resourceVersion: '9' } }];
    listVersion = '10';
    watches.push(
      (response) => {
        response.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'b', resourceVersion: '11' } } })}\n`);
        response.write(`${JSON.stringify({ type: 'DELETED', object: { metadata: { name: 'a', resourceVersion: '12' } } })}\n`);
        response.write(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { name: '', resourceVersion: '15' } } })}\n`);
        response.end(); // the server's watch timeout: resume from 15
      },
      (response) => {
        // What the relist will find.
        listItems = [{ metadata: { name: 'c', resourceVersion: '20' } }];
        listVersion = '20';
        response.end(`${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`);
      },
    );
    let changes = 0;
    const informer = new Informer<Item>({ client, path: '/api/v1/namespaces/n/secrets', name: 'secrets', logger: pino({ level: 'silent' }), onChange: () => (changes += 1) });
    informer.start();
    try {
      await eventually(() => informer.synced, 'the first list');
      await eventually(() => requests.length >= 5 && informer.get('c') !== undefined, 'the relisted cache');
    } finally {
      await informer.stop();
    }
    assert.deepEqual(requests.slice(0, 5), ['LIST rv=', 'WATCH rv=10', 'WATCH rv=15', 'LIST rv=', 'WATCH rv=20']);
    assert.deepEqual(informer.list().map((item) => item.metadata.name), ['c'], 'a relist replaces the cache');
    assert.ok(changes >= 4);
  });

  test('an API error restarts the informer with a fresh list', async () => {
    requests.length = 0;
    listStatus = 500;
    listItems = [{ metadata: { name: 'x', resourceVersion: '30' } }];
    listVersion = '30';
    const informer = new Informer<Item>({ client, path: '/api/v1/namespaces/n/secrets', name: 'secrets', logger: pino({ level: 'silent' }), onChange: () => undefined, random: () => 0 });
    informer.start();
    try {
      await eventually(() => informer.synced, 'the list after the error');
    } finally {
      await informer.stop();
    }
    assert.deepEqual(requests.slice(0, 2), ['LIST rv=', 'LIST rv=']);
    assert.deepEqual(informer.list().map((item) => item.metadata.name), ['x']);
  });

  test('a collection whose CRD is not installed yet (404) is empty and synced when absentIsEmpty, and fills once it exists', async () => {
    requests.length = 0;
    listStatus = 404;
    listItems = [{ metadata: { name: 'm', resourceVersion: '40' } }];
    listVersion = '40';
    let changes = 0;
    const informer = new Informer<Item>({
      client,
      path: '/apis/aigateway.dev/v1alpha1/namespaces/n/models',
      name: 'models',
      logger: pino({ level: 'silent' }),
      onChange: () => void changes++,
      random: () => 0,
      absentIsEmpty: true,
    });
    informer.start();
    try {
      await eventually(() => informer.synced, 'synced on the 404');
      await eventually(() => informer.list().length === 1 || undefined, 'the list once the collection exists');
    } finally {
      await informer.stop();
    }
    assert.ok(changes >= 2);
    // (A watch the previous test's informer left may still be logged: count the lists.)
    assert.ok(requests.filter((line) => line.startsWith('LIST')).length >= 2);
  });
});
