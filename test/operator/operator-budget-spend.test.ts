// The operator process end to end against a scripted API server: a UsageLimitPolicy whose
// counters (the proxies' budget store) passed its alert threshold gets status.spend, the
// ThresholdReached condition through the status writer, and exactly one
// BudgetThresholdReached Event, recorded by the spend tracker and not again by the writer.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { counterKey } from '../../proxy/budgets/budget-enforcer.ts';
import { periodOf } from '../../proxy/budgets/budget-period.ts';
import { MemoryBudgetStore } from '../../proxy/budgets/budget-store.ts';
import type { UsageLimitPolicy } from '../../proxy/budgets/usage-limit-schema.ts';
import { startOperator, type RunningOperator } from '../../operator/k8s/start-operator.ts';
import { eventually } from '../helpers/eventually.ts';

const SPEC = { type: 'cost', credit_limit: 10, alert_threshold: 5, periodic_reset: 'monthly', conditions: [{ key: 'workspace_id', value: 'team-a' }], group_by: [{ key: 'api_key' }] };
const POLICY = {
  apiVersion: 'aigateway.dev/v1alpha1',
  kind: 'UsageLimitPolicy',
  metadata: { name: 'team-a-monthly', namespace: 'ns', uid: 'uid-1', generation: 1, resourceVersion: '3', creationTimestamp: '2026-11-01T00:00:00Z' },
  spec: SPEC,
};

let server: Server;
let operator: RunningOperator;
const streams = new Set<ServerResponse>();
const patches: Array<{ path: string; body: any }> = [];
const events: any[] = [];
let version = 100;

before(async () => {
  server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => (text += chunk.toString()));
    request.on('end', () => {
      const url = new URL(request.url ?? '/', 'http://x');
      const body = text === '' ? undefined : JSON.parse(text);
      const json = (status: number, value: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
      version += 1;
      if (url.pathname.includes('/leases')) {
        if (request.method === 'GET') return json(404, { kind: 'Status', reason: 'NotFound', message: 'not found' });
        return json(request.method === 'POST' ? 201 : 200, { ...body, metadata: { ...body.metadata, resourceVersion: String(version) } });
      }
      if (request.method === 'GET' && url.searchParams.get('watch') === 'true') {
        response.writeHead(200, { 'content-type': 'application/json' });
        streams.add(response);
        response.on('close', () => streams.delete(response));
        return;
      }
      if (request.method === 'GET') {
        const items = url.pathname.endsWith('/usagelimitpolicies') ? [POLICY] : [];
        return json(200, { metadata: { resourceVersion: '10' }, items });
      }
      if (request.method === 'PATCH') {
        patches.push({ path: url.pathname, body });
        return json(200, { metadata: { name: 'x', resourceVersion: String(version) } });
      }
      if (request.method === 'POST' && url.pathname.endsWith('/events')) {
        events.push(body);
        return json(201, body);
      }
      return json(404, { kind: 'Status', reason: 'NotFound', message: `${request.method} ${url.pathname}` });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  assert.ok(address !== null && typeof address === 'object');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: `http://127.0.0.1:${address.port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'test-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  // What the proxies settled: $6 on one key's counter this month, past the $5 threshold.
  const store = new MemoryBudgetStore();
  const policy = { id: 'team-a-monthly', status: 'active', time_zone: 'UTC', fail_open: true, ...SPEC } as UsageLimitPolicy;
  await store.settle([{ key: counterKey(policy, periodOf(policy, Date.now()), 'api_key=k1'), actual: 6_000_000, ttlSeconds: 0, alertAt: -1 }], 't');
  operator = await startOperator({
    kubeConfig,
    namespace: 'ns',
    logger: pino({ level: 'silent' }),
    identity: 'op-test',
    metricsPort: 0,
    metricsHost: '127.0.0.1',
    apiPort: 0,
    apiHost: '127.0.0.1',
    budgetStore: store,
  });
});

after(async () => {
  await operator?.close();
  for (const stream of streams) stream.destroy();
  server.close();
});

test('the leader writes status.spend and ThresholdReached, and records one BudgetThresholdReached Event', { timeout: 30_000 }, async () => {
  const statusPath = '/apis/aigateway.dev/v1alpha1/namespaces/ns/usagelimitpolicies/team-a-monthly/status';
  const spend = await eventually(() => patches.find((patch) => patch.path === statusPath && patch.body.status.spend !== undefined)?.body.status.spend, 'status.spend', { timeoutMs: 20_000 });
  assert.equal(spend.spent, 6);
  assert.equal(spend.remaining, 4);
  assert.equal(spend.unit, 'usd');
  assert.equal(spend.limit, 10);
  assert.equal(spend.alertThreshold, 5);
  assert.equal(spend.groups, 1);
  assert.match(spend.period, /^m\d{4}-\d{2}$/);
  const conditions = await eventually(
    () => patches.find((patch) => patch.path === statusPath && patch.body.status.conditions?.some((condition: any) => condition.type === 'ThresholdReached'))?.body.status.conditions,
    'the spend conditions written by the status writer',
    { timeoutMs: 20_000 },
  );
  const byType = Object.fromEntries(conditions.map((condition: any) => [condition.type, `${condition.status}/${condition.reason}`]));
  assert.equal(byType['Ready'], 'True/Rendered');
  assert.equal(byType['ThresholdReached'], 'True/BudgetThresholdReached');
  assert.equal(byType['Exhausted'], 'False/WithinBudget');
  const budgetEvents = events.filter((event) => event.involvedObject.name === 'team-a-monthly' && /Budget|Threshold|Exhausted/.test(event.reason));
  assert.deepEqual(budgetEvents.map((event) => [event.type, event.reason]), [['Warning', 'BudgetThresholdReached']]);
});
