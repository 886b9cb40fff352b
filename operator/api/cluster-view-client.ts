import { Agent, request, type Dispatcher } from 'undici';
import { ClusterViewSchema, type ClusterViewFetch } from '../../proxy/console/cluster-view.ts';

// The proxy's side of GET /v1/configuration/cluster in a cluster: asks the operator's
// control-plane Service with the caller's key (the operator checks its scope and workspace)
// and reads the answer within a size cap and a short deadline, validated by its schema, so a
// slow or odd control plane costs the configuration page one field, never the page.

export interface ClusterViewClientOptions {
  /** Base URL of the control-plane API, e.g. http://aigateway-operator.aigw.svc:8080 */
  readonly baseUrl: string;
  /** Whole-answer deadline (ms); default 3 s. */
  readonly timeoutMs?: number;
  readonly dispatcher?: Dispatcher;
}

/** Largest answer read: 2,000 sources with their conditions fit well within it. */
const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/**
 * A ClusterViewFetch against the operator.
 *
 * @example registerConfigurationRoutes(app, { …, clusterView: clusterViewClient({ baseUrl }) });
 */
export function clusterViewClient(options: ClusterViewClientOptions): ClusterViewFetch {
  const base = new URL(options.baseUrl);
  const url = `${base.origin}${base.pathname.replace(/\/+$/, '')}/v1/configuration/cluster`;
  const dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 4 });
  const timeoutMs = options.timeoutMs ?? 3_000;
  return async ({ apiKey, traceId }) => {
    const signal = AbortSignal.timeout(timeoutMs);
    let answer: Dispatcher.ResponseData;
    try {
      answer = await request(url, { method: 'GET', headers: { 'x-gateway-api-key': apiKey, 'x-gateway-trace-id': traceId, accept: 'application/json' }, dispatcher, signal });
    } catch (error) {
      throw new Error(`the control plane (${base.origin}) is unreachable: ${(error as { code?: string }).code ?? (error as Error).name}`, { cause: error });
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) {
        answer.body.destroy();
        throw new Error(`the control plane's answer is over ${MAX_ANSWER_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    const json = jsonOrUndefined(Buffer.concat(chunks).toString('utf8'));
    if (answer.statusCode !== 200) {
      const message = (json as { error?: { message?: unknown } } | null | undefined)?.error?.message;
      throw new Error(`the control plane answered ${answer.statusCode}${typeof message === 'string' ? `: ${message.slice(0, 200)}` : ''}`);
    }
    const parsed = ClusterViewSchema.safeParse(json);
    if (!parsed.success) throw new Error("the control plane's cluster view does not match its schema");
    return parsed.data;
  };
}

function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
