// The proxy's API watch of its ConfigMap and Secret, against a small fake API server that
// speaks the list + watch protocol (resourceVersion, newline-delimited events, 410 Gone).
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startKubeStateSource, type KubeStateSource } from '../../../proxy/config/kube-state-source.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../../proxy/guardrails/builtin-guardrail-compiler.ts';
import type { LoadResult } from '../../../proxy/config/state-loader.ts';
import { eventually } from '../../helpers/eventually.ts';

interface FakeObject {
  metadata: { name: string; resourceVersion: string; annotations?: Record<string, string> };
  data: Record<string, string>;
}

const stateText = (threshold: number) => `cache:\n  semanticThreshold: ${threshold}\n`;
const credentialsText = (tag: string) => `# ${tag}\nproviders: {}\n`;

class FakeApiServer {
  readonly server: Server;
  readonly objects = new Map<string, FakeObject>();
  readonly watchers = new Map<string, ServerResponse[]>();
  readonly requests: Array<{ path: string; authorization: string | undefined }> = [];
  version = 10;

  constructor() {
    this.server = createServer((request, response) => this.#handle(request, response));
  }

  set(resource: 'configmaps' | 'secrets', name: string, hash: string, data: Record<string, string>, event = true): void {
    this.version += 1;
    const object = { metadata: { name, resourceVersion: String(this.version), annotations: { 'aigateway.dev/config-hash': hash } }, data };
    this.objects.set(resource, object);
    if (event) this.send(resource, { type: 'MODIFIED', object });
  }

  send(resource: string, event: unknown): void {
    for (const response of this.watchers.get(resource) ?? []) response.write(`${JSON.stringify(event)}\n`);
  }

  lists(resource: string): number {
    return this.requests.filter((entry) => entry.path.includes(`/${resource}?`) && !entry.path.includes('watch=true')).length;
  }

  #handle(request: IncomingMessage, response: ServerResponse): void {
    const url = new URL(request.url ?? '/', 'http://fake');
    this.requests.push({ path: `${url.pathname}?${url.searchParams.toString()}`, authorization: request.headers.authorization });
    const resource = url.pathname.split('/').at(-1) ?? '';
    const object = this.objects.get(resource);
    if (url.searchParams.get('watch') === 'true') {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.flushHeaders();
      const list = this.watchers.get(resource) ?? [];
      list.push(response);
      this.watchers.set(resource, list);
      request.on('close', () => this.watchers.set(resource, (this.watchers.get(resource) ?? []).filter((entry) => entry !== response)));
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ metadata: { resourceVersion: String(this.version) }, items: object === undefined ? [] : [object] }));
  }
}

describe('kube-state-source (API watch of the state ConfigMap and Secret)', () => {
  const api = new FakeApiServer();
  let origin = '';
  const sources: KubeStateSource[] = [];

  before(async () => {
    await new Promise<void>((resolve) => api.server.listen(0, '127.0.0.1', () => resolve()));
    const address = api.server.address();
    origin = typeof address === 'object' && address !== null ? `http://127.0.0.1:${address.port}` : '';
  });

  after(async () => {
    await Promise.all(sources.map((source) => source.close()));
    api.server.closeAllConnections();
    await new Promise((resolve) => api.server.close(resolve));
  });

  const start = (reloads: LoadResult[], errors: string[], maxLineBytes?: number): KubeStateSource => {
    const source = startKubeStateSource({
      apiServer: origin,
      namespace: 'team-a',
      configMapName: 'aigw-state',
      secretName: 'aigw-credentials',
      token: () => 'sa-token',
      env: {},
      guardrailCompiler: BUILTIN_GUARDRAIL_COMPILER,
      initialHash: 'none',
      onReload: (outcome) => reloads.push(outcome),
      onError: (message) => errors.push(message),
      maxLineBytes,
      maxBackoffMs: 50,
    });
    sources.push(source);
    return source;
  };

  test('lists both objects with the token and a metadata.name field selector, then applies a changed pair only when both carry the same rendered hash', async () => {
    api.set('configmaps', 'aigw-state', 'h1', { 'gateway.yaml': stateText(0.9) }, false);
    api.set('secrets', 'aigw-credentials', 'h1', { 'credentials.yaml': Buffer.from(credentialsText('h1')).toString('base64') }, false);
    const reloads: LoadResult[] = [];
    const errors: string[] = [];
    const source = start(reloads, errors);
    await source.synced(5_000);
    await eventually(() => reloads.length === 1, 'the first state');
    const first = reloads[0];
    assert.ok(first?.ok, JSON.stringify(first));
    assert.equal(first.state.document.cache.semanticThreshold, 0.9);
    assert.ok(api.requests.every((entry) => entry.authorization === 'Bearer sa-token'));
    assert.ok(api.requests.some((entry) => entry.path === '/api/v1/namespaces/team-a/configmaps?fieldSelector=metadata.name%3Daigw-state'));
    assert.ok(api.requests.some((entry) => entry.path.startsWith('/api/v1/namespaces/team-a/secrets?fieldSelector=metadata.name%3Daigw-credentials')));
    assert.ok(source.healthy());
    await eventually(() => api.watchers.get('configmaps')?.length && api.watchers.get('secrets')?.length, 'both watches');
    assert.ok(api.requests.some((entry) => entry.path.includes('watch=true') && entry.path.includes('resourceVersion=') && entry.path.includes('allowWatchBookmarks=true')));

    // The operator writes the Secret first, then the ConfigMap: in between, nothing changes.
    api.set('secrets', 'aigw-credentials', 'h2', { 'credentials.yaml': Buffer.from(credentialsText('h2')).toString('base64') });
    api.send('configmaps', { type: 'BOOKMARK', object: { metadata: { resourceVersion: String(api.version) } } });
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(reloads.length, 1, 'no reload on a half-written pair');
    api.set('configmaps', 'aigw-state', 'h2', { 'gateway.yaml': stateText(0.8) });
    await eventually(() => reloads.length === 2, 'the second state');
    const second = reloads[1];
    assert.ok(second?.ok);
    assert.equal(second.state.document.cache.semanticThreshold, 0.8);
    assert.equal(errors.length, 0, errors.join('; '));
    await source.close();
  });

  test('410 Gone re-lists; an oversized event is refused and re-listed (bounded buffer); an invalid state is reported, not applied', async () => {
    const reloads: LoadResult[] = [];
    const errors: string[] = [];
    const source = start(reloads, errors, 64 * 1024);
    await source.synced(5_000);
    await eventually(() => api.watchers.get('configmaps')?.length, 'the watch');
    const listsBefore = api.lists('configmaps');
    // Expired resourceVersion: the object changed meanwhile, only a re-list shows it.
    api.set('configmaps', 'aigw-state', 'h2', { 'gateway.yaml': stateText(0.7) }, false);
    api.send('configmaps', { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } });
    await eventually(() => reloads.some((outcome) => outcome.ok && outcome.state.document.cache.semanticThreshold === 0.7), 'the re-listed state');
    assert.ok(api.lists('configmaps') > listsBefore);
    assert.equal(errors.length, 0, `410 is not an error: ${errors.join('; ')}`);

    await eventually(() => api.watchers.get('configmaps')?.length, 'the watch again');
    api.send('configmaps', { type: 'MODIFIED', object: { metadata: { name: 'aigw-state', resourceVersion: '99' }, data: { 'gateway.yaml': `# ${'x'.repeat(70 * 1024)}\n` } } });
    await eventually(() => errors.some((message) => message.includes('longer than')), 'the oversized event refused');
    await eventually(() => api.watchers.get('configmaps')?.length, 'the watch after the backoff');

    const count = reloads.length;
    api.set('configmaps', 'aigw-state', 'h2', { 'gateway.yaml': 'cache:\n  semanticThreshold: 7\n' });
    const rejected = await eventually(() => reloads[count], 'the invalid state');
    assert.equal(rejected.ok, false);
    await source.close();
  });
});
