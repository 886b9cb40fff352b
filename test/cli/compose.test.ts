// compose.yaml as `docker compose up` would run it, without a container engine: every
// service's image, command and mounts are checked against the repository (the mounted files
// exist, Prometheus scrapes the gateway's metrics port, Grafana loads the chart's dashboard
// from a Prometheus data source), then the gateway service's command — the image's
// ENTRYPOINT plus compose's command, environment and state-file mount — is started on the
// host against the local Redis and PostgreSQL and must answer /ready, with /metrics only on
// its metrics port.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { load } from 'js-yaml';
import pg from 'pg';
import { POSTGRES_URL } from '../batches/store-backends.ts';
import { REDIS_URL, skip as redisSkip } from '../helpers/redis-test-kit.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

interface Service {
  image?: string;
  build?: string | { context: string };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
  healthcheck?: { test: string[] };
}

const compose = load(readFileSync(join(ROOT, 'compose.yaml'), 'utf8')) as { services: Record<string, Service>; volumes?: Record<string, unknown> };
const services = compose.services;
const gateway = services['gateway'] as Service;

/** `${NAME:-default}` as compose interpolates it, with an empty environment. */
const interpolate = (value: string): string => value.replace(/\$\{\w+:-([^}]*)\}/g, '$1');

/** Bind mounts of a service: container path → host path in the repository. */
function bindMounts(service: Service): Map<string, string> {
  const mounts = new Map<string, string>();
  for (const volume of service.volumes ?? []) {
    const [source = '', target = ''] = volume.split(':');
    if (source.startsWith('./')) mounts.set(target, join(ROOT, source));
  }
  return mounts;
}

const flag = (command: readonly string[], name: string): string | undefined =>
  command.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3);

let postgresReachable = false;
try {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 2_000 });
  await client.connect();
  await client.end();
  postgresReachable = true;
} catch {
  postgresReachable = false;
}

describe('compose.yaml', () => {
  test('gateway, Redis, PostgreSQL, Prometheus and Grafana, with pinned images and mounts that exist', () => {
    assert.deepEqual(Object.keys(services).sort(), ['gateway', 'grafana', 'postgres', 'prometheus', 'redis']);
    assert.equal(gateway.build, '.', 'the gateway is built from the repository Dockerfile');
    assert.match(services['redis']?.image ?? '', /^redis:\d/);
    assert.match(services['postgres']?.image ?? '', /^postgres:\d/);
    assert.match(services['prometheus']?.image ?? '', /^prom\/prometheus:v\d/);
    assert.match(services['grafana']?.image ?? '', /^grafana\/grafana:\d/);
    for (const [name, service] of Object.entries(services)) {
      for (const [target, source] of bindMounts(service)) assert.ok(existsSync(source), `${name}: ${source} (mounted at ${target}) exists`);
      for (const volume of service.volumes ?? []) {
        const source = volume.split(':')[0] ?? '';
        if (!source.startsWith('./')) assert.ok(compose.volumes !== undefined && source in compose.volumes, `${name}: named volume ${source} is declared`);
      }
    }
    // The gateway waits for healthy stores, and its own healthcheck asks /ready on its port.
    assert.deepEqual(gateway.depends_on, { redis: { condition: 'service_healthy' }, postgres: { condition: 'service_healthy' } });
    assert.ok(services['redis']?.healthcheck && services['postgres']?.healthcheck);
    assert.match(gateway.healthcheck?.test.join(' ') ?? '', new RegExp(`127\\.0\\.0\\.1:${flag(gateway.command ?? [], 'port')}/ready`));
  });

  test('the gateway uses the compose PostgreSQL and Redis with their credentials, and keeps its data in the image\'s data volume', () => {
    const env = gateway.environment ?? {};
    const database = new URL(env['DATABASE_URL'] ?? '');
    const postgres = services['postgres']?.environment ?? {};
    assert.equal(database.hostname, 'postgres');
    assert.equal(database.username, postgres['POSTGRES_USER']);
    assert.equal(database.password, postgres['POSTGRES_PASSWORD']);
    assert.equal(database.pathname, `/${postgres['POSTGRES_DB']}`);
    assert.equal(new URL(env['REDIS_URL'] ?? '').hostname, 'redis');
    assert.equal(flag(gateway.command ?? [], 'log-store'), 'postgres');
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const dataDir = /^ENV AIGATEWAY_DATA_DIR=(\S+)$/m.exec(dockerfile)?.[1];
    assert.ok(gateway.volumes?.some((volume) => volume.endsWith(`:${dataDir}`)), `a named volume at the image's data directory ${dataDir}`);
    // No secret is baked into the file: keys come from the caller's environment.
    for (const name of ['GATEWAY_API_KEY', 'OPENAI_API_KEY', 'AIGATEWAY_SECRET_KEY']) assert.equal(interpolate(env[name] ?? 'x'), '', `${name} defaults to unset`);
  });

  test('Prometheus scrapes the gateway\'s metrics port; Grafana provisions that Prometheus and the chart\'s dashboard', () => {
    const prometheus = services['prometheus'] as Service;
    const configPath = bindMounts(prometheus).get('/etc/prometheus/prometheus.yml');
    assert.ok(configPath);
    assert.ok(prometheus.command?.includes('--config.file=/etc/prometheus/prometheus.yml'));
    const config = load(readFileSync(configPath, 'utf8')) as { scrape_configs: Array<{ metrics_path?: string; static_configs: Array<{ targets: string[]; labels?: Record<string, string> }> }> };
    const scrape = config.scrape_configs[0];
    assert.deepEqual(scrape?.static_configs[0]?.targets, [`gateway:${flag(gateway.command ?? [], 'metrics-port')}`]);
    assert.ok(scrape?.static_configs[0]?.labels?.['namespace'], 'the dashboard selects on a namespace label');

    const grafana = services['grafana'] as Service;
    const mounts = bindMounts(grafana);
    const provisioning = mounts.get('/etc/grafana/provisioning') ?? '';
    const datasources = load(readFileSync(join(provisioning, 'datasources', 'prometheus.yaml'), 'utf8')) as { datasources: Array<{ type: string; url: string }> };
    assert.deepEqual(datasources.datasources.map((source) => [source.type, source.url]), [['prometheus', `http://prometheus:${/--web\.listen-address=:(\d+)/.exec(prometheus.command?.join(' ') ?? '')?.[1] ?? '9090'}`]]);
    const dashboards = load(readFileSync(join(provisioning, 'dashboards', 'aigateway.yaml'), 'utf8')) as { providers: Array<{ options: { path: string } }> };
    const dashboardDir = mounts.get(dashboards.providers[0]?.options.path ?? '');
    assert.equal(dashboardDir, join(ROOT, 'charts', 'aigateway', 'dashboards'), 'the provider reads the mounted chart dashboards');
    const dashboard = JSON.parse(readFileSync(join(dashboardDir, 'aigateway.json'), 'utf8')) as { uid: string };
    assert.equal(dashboard.uid, 'aigateway-overview');
  });

  test('the gateway service\'s command answers /ready against local Redis and PostgreSQL, /metrics on its metrics port only', {
    skip: redisSkip || (postgresReachable ? false : `PostgreSQL not reachable at ${POSTGRES_URL}`),
    timeout: 60_000,
  }, async () => {
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    const entrypoint = JSON.parse(/^ENTRYPOINT (.+)$/m.exec(dockerfile)?.[1] ?? '[]') as string[];
    assert.deepEqual(entrypoint, ['node', 'bin/aigateway.js']);
    const mounts = bindMounts(gateway);
    // Container paths of the bind mounts become their repository files.
    const command = (gateway.command ?? []).map((arg) => {
      for (const [target, source] of mounts) if (arg.endsWith(`=${target}`)) return arg.replace(target, source);
      return arg;
    });
    assert.ok(command.includes(`--config=${join(ROOT, 'gateway.example.yaml')}`), 'the state file is the mounted one');
    const dataDir = mkdtempSync(join(tmpdir(), 'aigw-compose-'));
    after(() => rmSync(dataDir, { recursive: true, force: true }));
    const env: Record<string, string> = { PATH: process.env['PATH'] ?? '' };
    for (const [name, value] of Object.entries(gateway.environment ?? {})) {
      const resolved = interpolate(value);
      if (resolved !== '') env[name] = resolved;
    }
    // The compose hosts are this machine's test servers.
    env['REDIS_URL'] = REDIS_URL;
    env['DATABASE_URL'] = POSTGRES_URL;
    // Loopback and free ports instead of the container's fixed ones (the last flag wins).
    const args = [join(ROOT, entrypoint[1] ?? ''), ...command, '--host=127.0.0.1', '--port=0', '--metrics-port=0', `--data-dir=${dataDir}`];
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    try {
      const [origin, metrics] = await new Promise<[string, string]>((resolve, reject) => {
        child.stderr.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          const match = /listening on (http:\/\/[^\s/]+)\/v1 .*metrics (http:\/\/[^\s/]+)\/metrics/.exec(stderr);
          if (match?.[1] !== undefined && match[2] !== undefined) resolve([match[1], match[2]]);
        });
        child.once('exit', (code) => reject(new Error(`the gateway service exited ${code}: ${stderr}`)));
      });
      assert.equal((await fetch(`${origin}/ready`)).status, 200);
      const scraped = await fetch(`${metrics}/metrics`);
      assert.equal(scraped.status, 200);
      assert.match(await scraped.text(), /aigateway_config_info/);
      assert.notEqual((await fetch(`${origin}/metrics`)).status, 200, 'not on the client-facing port');
    } finally {
      child.kill('SIGTERM');
    }
  });
});
