import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';
import type { GuardrailCompiler } from './guardrail-compiler.ts';
import { hashSources, loadStateFromTexts, type LoadResult, type SourceTexts } from './state-loader.ts';

// The proxy's state straight from the API server: its ConfigMap and Secret, each by
// list + watch (fieldSelector metadata.name, so a Role limited to those two names allows
// it). A mounted ConfigMap changes in the pod only on the kubelet's sync (about a minute);
// a watch event arrives in milliseconds. Deliberately not @kubernetes/client-node: `serve`
// stays lean; this is the small subset of the watch protocol it needs (resourceVersion,
// bookmarks, re-list on 410 Gone, bounded line buffer, backoff).
//
// The operator annotates both objects with the hash of the pair it rendered: a pair is
// applied only when the two annotations agree, so a proxy never serves the new credentials
// with the old state in between the operator's two writes.

export const HASH_ANNOTATION = 'aigateway.dev/config-hash';
const STATE_KEY = 'gateway.yaml';
const CREDENTIALS_KEY = 'credentials.yaml';
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface KubeObjectRef {
  readonly resource: 'configmaps' | 'secrets';
  readonly name: string;
}

export interface KubeStateSourceOptions {
  /** https://host:port of the API server. */
  readonly apiServer: string;
  readonly namespace: string;
  readonly configMapName: string;
  /** The credentials Secret; none when the state carries no credentials. */
  readonly secretName?: string | undefined;
  /** Bearer token, read before every request (projected tokens rotate). */
  readonly token: () => string;
  /** PEM of the API server's CA. */
  readonly ca?: string | undefined;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The guardrail engine's checks of a loaded state (see state-loader.ts). */
  readonly guardrailCompiler: GuardrailCompiler;
  /** Hash of the state already served, so an unchanged first list does not reload. */
  readonly initialHash: string;
  readonly onReload: (outcome: LoadResult) => void;
  readonly onError?: (message: string) => void;
  /** Longest watch line (one object as JSON) accepted; default 4 MiB (an object is at most ~1.5 MiB). */
  readonly maxLineBytes?: number;
  /** Server-side end of each watch request; default 240 s. */
  readonly watchTimeoutSeconds?: number;
  /** Backoff after a failure: from 250 ms doubling to this; default 5 s. */
  readonly maxBackoffMs?: number;
}

export interface KubeStateSource {
  /** Both objects listed and their watches connected (or reconnecting for less than `staleAfterMs`). */
  healthy(): boolean;
  /** Resolves once both objects were listed at least once (or rejects after `timeoutMs`). */
  synced(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

interface KubeObject {
  metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

interface WatchEvent {
  type?: string;
  object?: KubeObject & { code?: number; reason?: string; message?: string };
}

/** Reads the pod's ServiceAccount and KUBERNETES_SERVICE_* into options; undefined outside a pod. */
export function inClusterConnection(
  env: Readonly<Record<string, string | undefined>>,
  dir = SERVICE_ACCOUNT_DIR,
): Pick<KubeStateSourceOptions, 'apiServer' | 'namespace' | 'token' | 'ca'> | undefined {
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
  if (host === undefined || host === '') return undefined;
  let namespace: string;
  let ca: string;
  try {
    namespace = readFileSync(`${dir}/namespace`, 'utf8').trim();
    ca = readFileSync(`${dir}/ca.crt`, 'utf8');
    readFileSync(`${dir}/token`, 'utf8');
  } catch {
    return undefined;
  }
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return { apiServer: `https://${hostPart}:${port}`, namespace, ca, token: () => readFileSync(`${dir}/token`, 'utf8').trim() };
}

export function startKubeStateSource(options: KubeStateSourceOptions): KubeStateSource {
  const dispatcher = new Agent({ connect: options.ca === undefined ? {} : { ca: options.ca }, keepAliveTimeout: 30_000 });
  const abort = new AbortController();
  const maxLine = options.maxLineBytes ?? 4 * 1024 * 1024;
  const staleAfterMs = 30_000;
  let lastHash = options.initialHash;
  let closed = false;

  const refs: KubeObjectRef[] = [{ resource: 'configmaps', name: options.configMapName }];
  if (options.secretName !== undefined) refs.push({ resource: 'secrets', name: options.secretName });
  const objects = new Map<string, KubeObject | undefined>();
  const failingSince = new Map<string, number>();
  let resolveSynced: (() => void) | undefined;
  const syncedPromise = new Promise<void>((resolve) => (resolveSynced = resolve));

  const report = (message: string): void => options.onError?.(message);

  /** Applies the pair when both are known and carry the same rendered hash. */
  const evaluate = (): void => {
    if (closed || objects.size < refs.length) return;
    resolveSynced?.();
    const configMap = objects.get(options.configMapName);
    const secret = options.secretName === undefined ? undefined : objects.get(`secret/${options.secretName}`);
    if (configMap === undefined) return; // deleted: keep serving the last good state
    if (options.secretName !== undefined && secret === undefined) return;
    const configHash = configMap.metadata?.annotations?.[HASH_ANNOTATION];
    const secretHash = secret?.metadata?.annotations?.[HASH_ANNOTATION];
    if (configHash !== undefined && secretHash !== undefined && configHash !== secretHash) return; // mid-write
    const state = configMap.data?.[STATE_KEY];
    if (state === undefined) return;
    const encoded = secret?.data?.[CREDENTIALS_KEY];
    const texts: SourceTexts = { state, credentials: encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8') };
    const hash = hashSources(texts);
    if (hash === lastHash) return;
    lastHash = hash;
    options.onReload(loadStateFromTexts(texts, options.env, options.guardrailCompiler));
  };

  const keyOf = (ref: KubeObjectRef): string => (ref.resource === 'configmaps' ? ref.name : `secret/${ref.name}`);

  const path = (ref: KubeObjectRef, query: Record<string, string>): string => {
    const params = new URLSearchParams({ fieldSelector: `metadata.name=${ref.name}`, ...query });
    return `/api/v1/namespaces/${encodeURIComponent(options.namespace)}/${ref.resource}?${params.toString()}`;
  };

  const call = (target: string, timeoutMs: number) =>
    request(new URL(target, options.apiServer), {
      dispatcher,
      signal: abort.signal,
      headers: { authorization: `Bearer ${options.token()}`, accept: 'application/json' },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });

  /** One list: the object (or none) and the list's resourceVersion. */
  const list = async (ref: KubeObjectRef): Promise<string> => {
    const response = await call(path(ref, {}), 10_000);
    const text = await boundedText(response.body, maxLine);
    if (response.statusCode !== 200) throw new Error(`list ${ref.resource}/${ref.name}: HTTP ${response.statusCode} ${text.slice(0, 200)}`);
    const body = JSON.parse(text) as { metadata?: { resourceVersion?: string }; items?: KubeObject[] };
    objects.set(keyOf(ref), body.items?.[0]);
    return body.metadata?.resourceVersion ?? '';
  };

  /** Watches from `version` until the server ends the request; returns the last version, or undefined on 410. */
  const watchFrom = async (ref: KubeObjectRef, version: string): Promise<string | undefined> => {
    const timeoutSeconds = options.watchTimeoutSeconds ?? 240;
    const query = { watch: 'true', resourceVersion: version, allowWatchBookmarks: 'true', timeoutSeconds: String(timeoutSeconds) };
    const response = await call(path(ref, query), (timeoutSeconds + 30) * 1000);
    if (response.statusCode === 410) {
      await response.body.dump();
      return undefined;
    }
    if (response.statusCode !== 200) {
      const text = await boundedText(response.body, 64 * 1024).catch(() => '');
      throw new Error(`watch ${ref.resource}/${ref.name}: HTTP ${response.statusCode} ${text.slice(0, 200)}`);
    }
    failingSince.delete(keyOf(ref));
    let current = version;
    let pending = '';
    const decoder = new TextDecoder();
    for await (const chunk of response.body) {
      pending += decoder.decode(chunk as Buffer, { stream: true });
      if (pending.length > maxLine) {
        response.body.destroy();
        throw new Error(`watch ${ref.resource}/${ref.name}: an event is longer than ${maxLine} bytes`);
      }
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        newline = pending.indexOf('\n');
        if (line === '') continue;
        const event = JSON.parse(line) as WatchEvent;
        if (event.type === 'ERROR') {
          response.body.destroy();
          if (event.object?.code === 410) return undefined;
          throw new Error(`watch ${ref.resource}/${ref.name}: ${event.object?.message ?? 'error event'}`);
        }
        current = event.object?.metadata?.resourceVersion ?? current;
        if (event.type === 'ADDED' || event.type === 'MODIFIED') objects.set(keyOf(ref), event.object);
        else if (event.type === 'DELETED') objects.set(keyOf(ref), undefined);
        else continue; // BOOKMARK: only the version moves
        evaluate();
      }
    }
    return current;
  };

  const run = async (ref: KubeObjectRef): Promise<void> => {
    let backoff = 250;
    let version: string | undefined;
    while (!closed) {
      try {
        if (version === undefined) {
          version = await list(ref);
          evaluate();
        }
        version = await watchFrom(ref, version);
        backoff = 250;
      } catch (error) {
        if (closed) return;
        version = undefined; // re-list: events may have been missed
        if (!failingSince.has(keyOf(ref))) failingSince.set(keyOf(ref), Date.now());
        report((error as Error).message);
        await new Promise((resolve) => setTimeout(resolve, backoff).unref());
        backoff = Math.min(backoff * 2, options.maxBackoffMs ?? 5_000);
      }
    }
  };

  const loops = refs.map((ref) => run(ref));

  return {
    healthy() {
      if (closed || objects.size < refs.length) return false;
      const now = Date.now();
      for (const since of failingSince.values()) if (now - since > staleAfterMs) return false;
      return true;
    },
    synced(timeoutMs) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`state objects not listed within ${timeoutMs} ms`)), timeoutMs);
        timer.unref();
      });
      return Promise.race([syncedPromise, timeout]).finally(() => clearTimeout(timer));
    },
    async close() {
      closed = true;
      abort.abort();
      await Promise.allSettled(loops);
      await dispatcher.close().catch(() => undefined);
    },
  };
}

async function boundedText(body: AsyncIterable<unknown> & { destroy(): void }, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      body.destroy();
      throw new Error(`response larger than ${limit} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
