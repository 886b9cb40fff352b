// The chart as it is distributed: `helm package` makes an archive with the templates, CRDs,
// schema and dashboard, which installs like the directory, and `helm push` puts it in an OCI
// registry from which `helm pull` gets the same bytes back (the commands of
// docs/kubernetes.md, "Publish the chart"). The registry is a minimal in-memory one speaking
// the OCI distribution API over plain HTTP.
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';

const ROOT = join(import.meta.dirname, '..', '..');
const CHART = join(ROOT, 'charts', 'aigateway');
const run = promisify(execFile);

let helmBin = '';
let skip: string | false = false;
try {
  helmBin = join(execFileSync('bash', [join(ROOT, 'test', 'e2e', 'tools.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(), 'helm');
} catch (error) {
  skip = `helm could not be installed (test/e2e/tools.sh): ${(error as Error).message}`;
}

const scratch = mkdtempSync(join(tmpdir(), 'aigw-chart-'));
after(() => rmSync(scratch, { recursive: true, force: true }));
const helm = (args: string[]) => run(helmBin, args, { maxBuffer: 32 * 1024 * 1024, env: { ...process.env, HELM_CONFIG_HOME: join(scratch, 'helm-config'), HELM_CACHE_HOME: join(scratch, 'helm-cache') } });

/** An OCI registry in memory: blobs by digest, manifests by tag and digest, monolithic or chunked uploads. */
async function startRegistry(): Promise<{ host: string; close: () => void }> {
  const blobs = new Map<string, Buffer>();
  const manifests = new Map<string, { body: Buffer; type: string }>();
  const uploads = new Map<string, Buffer[]>();
  const digestOf = (body: Buffer) => `sha256:${createHash('sha256').update(body).digest('hex')}`;
  const read = async (request: IncomingMessage) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://registry');
    const path = url.pathname;
    const send = (status: number, headers: Record<string, string | number> = {}, body?: Buffer) => {
      response.writeHead(status, headers);
      response.end(request.method === 'HEAD' ? undefined : body);
    };
    if (path === '/v2/' || path === '/v2') return send(200, { 'docker-distribution-api-version': 'registry/2.0' });
    let match = /^\/v2\/(.+)\/blobs\/uploads\/([^/]*)$/.exec(path);
    if (match !== null) {
      const [, name, id] = match;
      if (request.method === 'POST') {
        const upload = randomUUID();
        uploads.set(upload, []);
        return send(202, { location: `/v2/${name}/blobs/uploads/${upload}`, range: '0-0', 'docker-upload-uuid': upload });
      }
      const parts = uploads.get(id ?? '');
      if (parts === undefined) return send(404);
      parts.push(await read(request));
      if (request.method === 'PATCH') return send(202, { location: `/v2/${name}/blobs/uploads/${id}`, range: `0-${Buffer.concat(parts).length - 1}` });
      const body = Buffer.concat(parts);
      const digest = url.searchParams.get('digest') ?? '';
      if (digest !== digestOf(body)) return send(400);
      blobs.set(digest, body);
      uploads.delete(id ?? '');
      return send(201, { location: `/v2/${name}/blobs/${digest}`, 'docker-content-digest': digest });
    }
    match = /^\/v2\/(.+)\/blobs\/(sha256:[0-9a-f]{64})$/.exec(path);
    if (match !== null) {
      const blob = blobs.get(match[2] ?? '');
      if (blob === undefined) return send(404);
      return send(200, { 'content-length': blob.length, 'docker-content-digest': match[2] ?? '', 'content-type': 'application/octet-stream' }, blob);
    }
    match = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(path);
    if (match !== null) {
      const [, name, reference] = match;
      if (request.method === 'PUT') {
        const body = await read(request);
        const stored = { body, type: request.headers['content-type'] ?? 'application/vnd.oci.image.manifest.v1+json' };
        const digest = digestOf(body);
        manifests.set(`${name}:${reference}`, stored);
        manifests.set(`${name}:${digest}`, stored);
        return send(201, { location: `/v2/${name}/manifests/${digest}`, 'docker-content-digest': digest });
      }
      const stored = manifests.get(`${name}:${reference}`);
      if (stored === undefined) return send(404);
      return send(200, { 'content-type': stored.type, 'content-length': stored.body.length, 'docker-content-digest': digestOf(stored.body) }, stored.body);
    }
    match = /^\/v2\/(.+)\/tags\/list$/.exec(path);
    if (match !== null) {
      const name = match[1] ?? '';
      const tags = [...manifests.keys()].filter((key) => key.startsWith(`${name}:`) && !key.includes('sha256:')).map((key) => key.slice(name.length + 1));
      return send(200, { 'content-type': 'application/json' }, Buffer.from(JSON.stringify({ name, tags })));
    }
    return send(404);
  };
  const server = createServer((request, response) => {
    handle(request, response).catch(() => response.writeHead(500).end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { host: `127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

describe('chart packaging', { skip }, () => {
  test('helm package makes an archive with templates, CRDs, schema and dashboard that renders like the directory', async () => {
    const out = join(scratch, 'package');
    const packaged = await helm(['package', CHART, '--destination', out]);
    assert.match(packaged.stdout, /Successfully packaged chart/);
    const version = /^version:\s*(\S+)/m.exec(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'))?.[1];
    assert.deepEqual(readdirSync(out), [`aigateway-${version}.tgz`]);
    const archive = join(out, `aigateway-${version}.tgz`);
    const listing = (await run('tar', ['tzf', archive])).stdout.split('\n');
    for (const file of ['aigateway/Chart.yaml', 'aigateway/values.schema.json', 'aigateway/dashboards/aigateway.json', 'aigateway/templates/proxy-deployment.yaml', 'aigateway/crds/aigateway.dev_gatewayconfigs.yaml']) {
      assert.ok(listing.includes(file), file);
    }
    const fromArchive = await helm(['template', 'rel', archive, '-n', 'aigw', '--include-crds']);
    const fromDirectory = await helm(['template', 'rel', CHART, '-n', 'aigw', '--include-crds']);
    assert.equal(fromArchive.stdout, fromDirectory.stdout);
  });

  test('helm push to an OCI registry, and helm pull gets the same archive back', async () => {
    const registry = await startRegistry();
    try {
      const out = join(scratch, 'oci');
      await helm(['package', CHART, '--destination', out]);
      const [archiveName = ''] = readdirSync(out);
      const pushed = await helm(['push', join(out, archiveName), `oci://${registry.host}/charts`, '--plain-http']);
      assert.match(pushed.stdout + pushed.stderr, /Pushed: .*charts\/aigateway/);
      const pulledDir = join(scratch, 'pulled');
      mkdirSync(pulledDir);
      const version = /aigateway-(.+)\.tgz$/.exec(archiveName)?.[1] ?? '';
      await helm(['pull', `oci://${registry.host}/charts/aigateway`, '--version', version, '--plain-http', '--destination', pulledDir]);
      assert.deepEqual(readFileSync(join(pulledDir, archiveName)), readFileSync(join(out, archiveName)));
    } finally {
      registry.close();
    }
  });
});
