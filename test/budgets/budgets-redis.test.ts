// Budgets with the real Redis, under the worst cases: three gateway processes sharing one
// Redis take a concurrent burst; a gateway killed and replaced mid-run keeps the spend;
// five concurrent 300k-token requests at long-context (tiered) prices against a cap that
// covers four; a Claude Code–style session with prompt caching never gets a false 429;
// streams cut at random points are charged what they consumed.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { dump } from 'js-yaml';
import { Redis } from 'ioredis';
import { RedisBudgetStore } from '../../proxy/budgets/redis-budget-store.ts';
import { baseState, seededRandom, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { admin, PREFIX, REDIS_URL, skip } from '../helpers/redis-test-kit.ts';
import { startBudgetUpstream, type BudgetUpstream } from './budget-upstream.ts';

const RUN = `${process.pid}-${Date.now()}`;
const PRICES = [{ model: 'budget-model', inputPerMillion: 1000, outputPerMillion: 2000 }];
const CHAT = { model: 'budget-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 20 };
const MICRO = 1_000_000;

let upstream: BudgetUpstream;
before(async () => {
  upstream = await startBudgetUpstream({
    // Long prompts (the tiered test) report 300k input tokens; Claude Code–style calls a cached prefix.
    usage: (body) => {
      const text = JSON.stringify(body);
      if (text.length > 1_000_000) return { prompt: 300_000, completion: 1000 };
      if (text.includes('cache_control')) return { prompt: 50_000, cacheRead: 49_800, completion: 100 };
      return { prompt: 10, completion: 20 };
    },
  });
});
after(async () => upstream.close());

function providers(): unknown[] {
  return [
    { slug: 'up', provider: 'openai', virtualKey: 'vk-up', apiKey: 'sk-up', customHost: `${upstream.origin}/v1` },
    { slug: 'claude', provider: 'anthropic', virtualKey: 'vk-claude', apiKey: 'sk-ant-up', customHost: `${upstream.origin}/v1` },
  ];
}

async function post(origin: string, path: string, body: unknown, virtualKey = 'vk-up'): Promise<number> {
  const response = await fetch(`${origin}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': virtualKey },
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return response.status;
}

/** A budget counter's fields in Redis once no reservation is open: spent and used agree. */
async function settled(key: string): Promise<number> {
  return eventually(async () => {
    const [used, spent] = await admin.hmget(key, 'u', 's');
    return used !== null && used === spent ? Number(spent) : undefined;
  }, `${key} to settle`, { timeoutMs: 15_000 });
}

describe('three gateway processes, one Redis', { skip }, () => {
  const burstPolicy = `burst-${RUN}`;
  const restartPolicy = `restart-${RUN}`;
  const keys = [`aigw:{budget}:${burstPolicy}:all:workspace_id=default`, `aigw:{budget}:${restartPolicy}:m`];
  let dir: string;
  let statePath: string;
  const children: ChildProcess[] = [];
  const origins: string[] = [];

  async function startChild(): Promise<{ child: ChildProcess; origin: string }> {
    const cli = fileURLToPath(new URL('../../bin/aigateway.js', import.meta.url));
    const index = children.length;
    const child = spawn(process.execPath, [cli, 'serve', '--config', statePath, '--port', '0', '--data-dir', join(dir, `data-${index}`), '--log-file', join(dir, `log-${index}`)], {
      env: { ...process.env, REDIS_URL, AIGATEWAY_MAX_IN_FLIGHT_PER_KEY: '1000' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(child);
    const origin = await new Promise<string>((resolve, reject) => {
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        const match = /listening on (http:\/\/\S+)\/v1/.exec(stderr);
        if (match?.[1] !== undefined) resolve(match[1]);
      });
      child.once('exit', (code) => reject(new Error(`gateway exited ${code}: ${stderr}`)));
    });
    return { child, origin };
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'aigw-budgets-'));
    statePath = join(dir, 'gateway.yaml');
    const common = { type: 'cost', credit_limit: 1, max_reservation: 0.1, fail_open: false, group_by: [{ key: 'workspace_id' }] };
    await writeFile(
      statePath,
      dump(
        baseState({
          providers: providers(),
          modelPrices: PRICES,
          usageLimitPolicies: [
            { id: burstPolicy, ...common, conditions: [{ key: 'metadata.phase', value: 'burst' }] },
            { id: restartPolicy, ...common, periodic_reset: 'monthly', time_zone: 'Asia/Tokyo', conditions: [{ key: 'metadata.phase', value: 'restart' }] },
          ],
        }),
      ),
    );
    for (let i = 0; i < 3; i++) origins.push((await startChild()).origin);
  });
  after(async () => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    }
    let cursor = '0';
    do {
      const [next, found] = await admin.scan(cursor, 'MATCH', `aigw:{budget}:*${RUN}*`, 'COUNT', 1000);
      if (found.length > 0) await admin.del(...found);
      cursor = next;
    } while (cursor !== '0');
    await rm(dir, { recursive: true, force: true });
  });

  const send = (origin: string, phase: string) =>
    fetch(`${origin}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-up', 'x-gateway-metadata': JSON.stringify({ phase }) },
      body: JSON.stringify(CHAT),
    }).then(async (response) => {
      await response.arrayBuffer();
      return response.status;
    });

  test('a concurrent burst of 200 across three processes spends at most the $1 limit', { timeout: 60_000 }, async () => {
    // Warm each process's connection (a request no budget matches).
    for (const origin of origins) await eventually(async () => (await send(origin, 'warm')) === 200, 'the gateway to answer', { timeoutMs: 10_000 });
    const statuses = await Promise.all(Array.from({ length: 200 }, (_, i) => send(origins[i % 3] as string, 'burst')));
    const admitted = statuses.filter((status) => status === 200).length;
    assert.deepEqual(statuses.filter((status) => status !== 200 && status !== 429 && status !== 503), []);
    const spent = await settled(keys[0] as string);
    // Each answer costs $0.05 and its worst case is reserved first: never past the limit.
    assert.ok(spent <= 1 * MICRO + 0.1 * MICRO, `spent ${spent / MICRO} USD`);
    assert.ok(spent <= 1 * MICRO, `spent ${spent / MICRO} USD`);
    assert.equal(spent, Math.round(admitted * 0.05 * MICRO));
    // Store calls that time out under the burst are 503s (fail_open: false), never admissions.
    const refused = statuses.filter((status) => status === 429).length;
    assert.ok(admitted >= 5, `admitted ${admitted}`);
    assert.ok(refused >= 100, `refused ${refused}, ${200 - admitted - refused} unavailable`);
  });

  test('a gateway killed mid-run and replaced: the spend lives in Redis, the limit holds', { timeout: 60_000 }, async () => {
    const first = await Promise.all(Array.from({ length: 12 }, (_, i) => send(origins[i % 3] as string, 'restart')));
    // Twelve worst cases fit the $1: none is refused (a store timeout is a 503, fail-closed).
    assert.deepEqual(first.filter((status) => status !== 200 && status !== 503), []);
    const admittedFirst = first.filter((status) => status === 200).length;
    assert.ok(admittedFirst >= 6, `admitted ${admittedFirst}`);
    const counter = await eventually(async () => (await admin.keys(`aigw:{budget}:${restartPolicy}:*`))[0], 'the counter key');
    // Monthly in Tokyo: m<year>-<month>, kept for a while after the period.
    assert.match(counter, /:m\d{4}-\d{2}:workspace_id=default$/);
    assert.ok((await admin.ttl(counter)) > 31 * 86_400);
    // Settlement follows the answer's last byte (on the response's close), so wait for it
    // before the kill: a gateway killed between the two leaves its worst case charged.
    assert.equal(await settled(counter), Math.round(admittedFirst * 0.05 * MICRO));
    // Killed without a drain: nothing of it survives but what Redis holds.
    const victim = children[0] as ChildProcess;
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    const replacement = await startChild();
    assert.equal(await settled(counter), Math.round(admittedFirst * 0.05 * MICRO));
    const rest = [replacement.origin, origins[1] as string, origins[2] as string];
    const second = await Promise.all(Array.from({ length: 60 }, (_, i) => send(rest[i % 3] as string, 'restart')));
    const spent = await settled(counter);
    assert.ok(spent <= 1 * MICRO, `spent ${spent / MICRO} USD`);
    assert.equal(spent, Math.round((admittedFirst + second.filter((status) => status === 200).length) * 0.05 * MICRO));
    // How much of the burst was refused depends on how its reservations ($0.10 worst case each,
    // settled to $0.05) overlapped. One at a time, the replacement admits exactly what the
    // shared counter has left — from zero it would admit twenty — and then refuses.
    let more = 0;
    let status = await send(replacement.origin, 'restart');
    for (; status === 200 && more < 20; status = await send(replacement.origin, 'restart')) more += 1;
    assert.equal(status, 429);
    const final = await settled(counter);
    assert.equal(final, spent + Math.round(more * 0.05 * MICRO));
    assert.ok(final <= 1 * MICRO, `spent ${final / MICRO} USD`);
    assert.ok(final > 0.9 * MICRO, `spent ${final / MICRO} USD: the budget was used up`);
    assert.ok(more <= Math.round((1 * MICRO - spent) / (0.05 * MICRO)), `the replacement admitted ${more} more after ${spent / MICRO} USD`);
    // The burst policy's counter (never resets) has no expiry.
    assert.equal(await admin.ttl(keys[0] as string), -1);
  });
});

describe('one gateway on Redis', { skip }, () => {
  let harness: Harness;
  before(async () => {
    harness = await startHarness({
      state: baseState({
        providers: providers(),
        modelPrices: PRICES,
        usageLimitPolicies: [
          // Four 300k-token answers at the >200k tier ($6 in / $22.50 out per million) are $7.29.
          { id: 'long-context', type: 'cost', credit_limit: 7.32, conditions: [{ key: 'metadata.test', value: 'tiers' }], group_by: [{ key: 'api_key' }] },
          { id: 'coding-agent', type: 'cost', credit_limit: 1, max_reservation: 0.25, conditions: [{ key: 'metadata.test', value: 'agent' }], group_by: [{ key: 'api_key' }] },
          { id: 'aborts', type: 'cost', credit_limit: 100, conditions: [{ key: 'metadata.test', value: 'aborts' }], group_by: [{ key: 'api_key' }] },
        ],
      }),
      budgetStore: new RedisBudgetStore({ url: REDIS_URL, keyPrefix: PREFIX, commandTimeoutMs: 1000 }),
      maxInFlightPerKey: 100,
    });
  });
  after(async () => harness.close());

  const messages = (test: string, body: Record<string, unknown>) =>
    fetch(`${harness.gateway.origin}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-claude', 'x-gateway-metadata': JSON.stringify({ test }), 'anthropic-version': '2023-06-01' },
      body: JSON.stringify(body),
    });

  test('five concurrent 300k-token requests at tiered prices against a cap covering four: four pass, one is refused', { timeout: 60_000 }, async () => {
    const long = 'x'.repeat(1_200_000);
    const body = { model: 'claude-sonnet-4-5', max_tokens: 1000, messages: [{ role: 'user', content: long }] };
    const statuses = await Promise.all(Array.from({ length: 5 }, () => messages('tiers', body).then(async (response) => (await response.arrayBuffer(), response.status))));
    assert.deepEqual([...statuses].sort(), [200, 200, 200, 200, 429]);
    const spent = await settled(`${PREFIX}{budget}:long-context:all:api_key=test`);
    assert.equal(spent, Math.round(4 * 1.8225 * MICRO));
  });

  test('a Claude Code–style session (30 small streamed calls, max_tokens 32000, cached prompt) never gets a false 429', { timeout: 60_000 }, async () => {
    const body = {
      model: 'claude-sonnet-4-5',
      max_tokens: 32_000,
      stream: true,
      system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'run the tests' }],
    };
    for (let i = 0; i < 30; i++) {
      const response = await messages('agent', body);
      const text = await response.text();
      assert.equal(response.status, 200, `call ${i}: ${text.slice(0, 300)}`);
      assert.match(text, /message_stop/);
    }
    // 200 fresh input ($3/M) + 49,800 cache reads ($0.30/M) + 100 output ($15/M) = $0.01704 a call.
    const spent = await settled(`${PREFIX}{budget}:coding-agent:all:api_key=test`);
    assert.ok(Math.abs(spent - 30 * 0.01704 * MICRO) <= 30, `spent ${spent / MICRO}`);
  });

  test('streams cut at random points are charged their prompt and what they were sent', { timeout: 60_000 }, async () => {
    const random = seededRandom(30);
    const key = `${PREFIX}{budget}:aborts:all:api_key=test`;
    let floor = 0;
    for (let i = 0; i < 8; i++) {
      const cut = 1 + Math.floor(random() * 4); // after 1..4 of the 5 content events
      const body = JSON.stringify({ ...CHAT, stream: true, messages: [{ role: 'user', content: `HOLD-STREAM ${i}` }] });
      const before = upstream.aborted;
      await new Promise<void>((resolve) => {
        const request = http.request(`${harness.gateway.origin}/v1/chat/completions`, {
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-virtual-key': 'vk-up', 'x-gateway-metadata': '{"test":"aborts"}' },
        });
        request.on('error', () => resolve());
        request.on('response', (response) => {
          let seen = '';
          response.on('data', (chunk: Buffer) => {
            seen += chunk.toString();
            if (seen.includes(`w${cut - 1} `)) {
              request.destroy();
              resolve();
            }
          });
          response.on('error', () => resolve());
        });
        request.end(body);
      });
      await eventually(() => upstream.aborted > before, 'the upstream stream to be cut');
      // The prompt estimate (request bytes / 4 at $0.001) and `cut` events at $0.002, at least.
      floor += Math.ceil(body.length / 4) * 1000 + cut * 2000;
    }
    const spent = await settled(key);
    assert.ok(spent >= floor, `spent ${spent} < ${floor}`);
    // Never more than everything the upstream had sent (5 events each) and the prompt.
    assert.ok(spent <= floor + 8 * 5 * 2000 + 8 * 100 * 1000, `spent ${spent}`);
  });
});

// A Redis of its own (never the shared one) on a free port, with an append-only file so a
// restart keeps the counters, restarted while a burst is in flight.
describe('Redis restarted mid-run', { skip: skip || (spawnSyncOk('redis-server') ? false : 'redis-server not installed') }, () => {
  test('counters survive the restart and the limit holds across it', { timeout: 60_000 }, async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'aigw-budget-redis-'));
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    let server = startRedis(port, dir);
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 50 });
    probe.on('error', () => {});
    t.after(async () => {
      probe.disconnect();
      server.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    });
    await eventually(async () => (await probe.connect().catch(() => undefined), (await probe.ping().catch(() => '')) === 'PONG'), 'redis-server to start');
    const harness = await startHarness({
      state: baseState({
        providers: providers(),
        modelPrices: PRICES,
        usageLimitPolicies: [{ id: 'restart', type: 'cost', credit_limit: 1, fail_open: false, conditions: [{ key: 'api_key', value: '*' }], group_by: [{ key: 'api_key' }] }],
      }),
      budgetStore: new RedisBudgetStore({ url, commandTimeoutMs: 500 }),
      maxInFlightPerKey: 100,
    });
    t.after(() => harness.close());
    const key = '{budget}:restart:all:api_key=test';
    const spentNow = async () => Number((await probe.hget(`aigw:${key}`, 's').catch(() => null)) ?? 0);
    for (let i = 0; i < 6; i++) assert.equal(await post(harness.gateway.origin, '/v1/chat/completions', CHAT), 200);
    await eventually(async () => (await spentNow()) === Math.round(6 * 0.05 * MICRO), 'six answers settled');

    // A burst, and Redis stopped (gracefully: the append-only file is synced) while it runs.
    let answered = 0;
    let stopped: Promise<void> | undefined;
    const burst = Promise.all(
      Array.from({ length: 30 }, () =>
        post(harness.gateway.origin, '/v1/chat/completions', CHAT).then((status) => {
          if (++answered === 3) {
            server.kill('SIGTERM');
            stopped = once(server, 'exit').then(() => undefined);
          }
          return status;
        }),
      ),
    );
    const during = await burst;
    await stopped;
    assert.deepEqual(during.filter((status) => status !== 200 && status !== 429 && status !== 503), []);
    server = startRedis(port, dir);
    // The counter came back from the append-only file: nothing settled before was lost.
    const restored = await eventually(async () => {
      const spent = await spentNow();
      return spent >= Math.round(6 * 0.05 * MICRO) ? spent : undefined;
    }, 'Redis to come back with the counter', { timeoutMs: 15_000 });
    assert.ok(restored >= 6 * 0.05 * MICRO);
    // The gateway reconnects on its own and keeps enforcing the same budget.
    await eventually(async () => (await post(harness.gateway.origin, '/v1/chat/completions', CHAT)) !== 503, 'the gateway to reach Redis again', { timeoutMs: 15_000 });
    const after = await Promise.all(Array.from({ length: 30 }, () => post(harness.gateway.origin, '/v1/chat/completions', CHAT)));
    assert.ok(after.includes(429), 'the budget ran out');
    const [used, spent] = (await probe.hmget(`aigw:${key}`, 'u', 's')).map(Number);
    assert.ok((spent ?? 0) <= 1 * MICRO, `spent ${spent}`);
    // Answers whose settlement fell into the outage keep their reservation counted (never less).
    assert.ok((used ?? 0) >= (spent ?? 0));
  });
});

function spawnSyncOk(command: string): boolean {
  return spawnSync(command, ['--version'], { stdio: 'ignore' }).status === 0;
}

function startRedis(port: number, dir: string): ChildProcess {
  return spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir, '--daemonize', 'no'], { stdio: 'ignore' });
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
