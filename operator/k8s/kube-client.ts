import type { ConnectionOptions } from 'node:tls';
import { KubeConfig } from '@kubernetes/client-node';
import { Agent, request } from 'undici';

// A thin REST client for the few Kubernetes calls the operator makes (list, watch,
// server-side apply, status patch, create, get), over undici with the credentials of a
// kubeconfig (KUBECONFIG, ~/.kube/config or the in-cluster service account). The official
// client's KubeConfig does the auth (tokens, client certs, token-file refresh); the wire
// calls stay visible here, including the watch stream and 410 Gone.

export interface WatchEvent<T> {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  readonly object: T;
}

/** A non-2xx answer of the API server, with its Status reason (`NotFound`, `Conflict`, `Expired`…). */
export class KubeApiError extends Error {
  readonly status: number;
  readonly reason: string | undefined;
  constructor(status: number, reason: string | undefined, message: string) {
    super(message);
    this.name = 'KubeApiError';
    this.status = status;
    this.reason = reason;
  }
}

export function isKubeApiError(error: unknown, status?: number): error is KubeApiError {
  return error instanceof KubeApiError && (status === undefined || error.status === status);
}

export interface RequestOptions {
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: unknown;
  /** Default application/json; SSA uses application/apply-patch+yaml, status merge-patch+json. */
  readonly contentType?: string;
  readonly signal?: AbortSignal;
  readonly timeoutMs?: number;
}

export interface KubeClientOptions {
  readonly kubeConfig: KubeConfig;
}

/** Loads KUBECONFIG / ~/.kube/config, or the in-cluster service account when running in a pod. */
export function loadKubeConfig(kubeconfigPath?: string): KubeConfig {
  const config = new KubeConfig();
  if (kubeconfigPath !== undefined && kubeconfigPath !== '') config.loadFromFile(kubeconfigPath);
  else config.loadFromDefault();
  return config;
}

export class KubeClient {
  readonly #config: KubeConfig;
  readonly #server: string;
  #agent: Agent | undefined;

  constructor(options: KubeClientOptions) {
    this.#config = options.kubeConfig;
    const cluster = this.#config.getCurrentCluster();
    if (cluster === null) throw new Error('kubeconfig has no current cluster');
    this.#server = cluster.server.replace(/\/+$/, '');
  }

  get server(): string {
    return this.#server;
  }

  /** One JSON request; throws KubeApiError on a non-2xx answer. */
  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.#send(method, path, options, 'application/json');
    const text = await response.body.text();
    if (response.statusCode >= 300) throw errorFrom(response.statusCode, text, method, path);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }

  /**
   * Watches a collection from a resourceVersion: yields events until the server ends the
   * stream (timeoutSeconds) or the signal aborts. A 410 Gone arrives as a KubeApiError or an
   * ERROR event with code 410; the caller relists.
   */
  async *watch<T>(path: string, query: RequestOptions['query'], signal: AbortSignal): AsyncGenerator<WatchEvent<T>> {
    const response = await this.#send('GET', path, { query: { ...query, watch: true }, signal, timeoutMs: 0 }, 'application/json');
    if (response.statusCode >= 300) throw errorFrom(response.statusCode, await response.body.text(), 'WATCH', path);
    let buffered = '';
    response.body.setEncoding('utf8');
    try {
      for await (const chunk of response.body as AsyncIterable<string>) {
        buffered += chunk;
        let newline = buffered.indexOf('\n');
        while (newline >= 0) {
          const line = buffered.slice(0, newline).trim();
          buffered = buffered.slice(newline + 1);
          if (line !== '') yield JSON.parse(line) as WatchEvent<T>;
          newline = buffered.indexOf('\n');
        }
      }
    } finally {
      response.body.destroy();
    }
  }

  close(): Promise<void> {
    return this.#agent?.close() ?? Promise.resolve();
  }

  async #send(method: string, path: string, options: RequestOptions, accept: string) {
    const auth: { headers?: Record<string, string> } & ConnectionOptions = {};
    // Per request: token files (in-cluster) are re-read by the KubeConfig's authenticator.
    await this.#config.applyToHTTPSOptions(auth as Parameters<KubeConfig['applyToHTTPSOptions']>[0]);
    this.#agent ??= new Agent({
      connect: {
        ...(auth.ca === undefined ? {} : { ca: auth.ca }),
        ...(auth.cert === undefined ? {} : { cert: auth.cert }),
        ...(auth.key === undefined ? {} : { key: auth.key }),
        ...(auth.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: auth.rejectUnauthorized }),
        ...(auth.servername === undefined ? {} : { servername: auth.servername }),
      },
      keepAliveTimeout: 30_000,
    });
    const url = new URL(this.#server + path);
    for (const [name, value] of Object.entries(options.query ?? {})) if (value !== undefined) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { accept, ...(auth.headers ?? {}) };
    let body: string | undefined;
    if (options.body !== undefined) {
      headers['content-type'] = options.contentType ?? 'application/json';
      body = JSON.stringify(options.body);
    }
    const timeout = options.timeoutMs ?? 30_000;
    return request(url, {
      method: method as 'GET',
      headers,
      body,
      dispatcher: this.#agent,
      signal: options.signal,
      headersTimeout: timeout === 0 ? 0 : timeout,
      bodyTimeout: timeout === 0 ? 0 : timeout,
    });
  }
}

function errorFrom(status: number, text: string, method: string, path: string): KubeApiError {
  let reason: string | undefined;
  let message = text.slice(0, 500);
  try {
    const parsed = JSON.parse(text) as { reason?: string; message?: string };
    reason = parsed.reason;
    message = parsed.message ?? message;
  } catch {
    // not a Status object
  }
  return new KubeApiError(status, reason, `${method} ${path}: ${status} ${reason ?? ''} ${message}`.trim());
}
