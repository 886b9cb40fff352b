import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { RequestRecord, RequestRecordSink } from '../observability/request-record.ts';
import type { McpCatalog, McpPrincipal } from './mcp-catalog.ts';
import { errorCodeOf, isObject, MCP_ERROR, statusOfRpcError, toMcpError, type RpcError } from './mcp-errors.ts';

// Every JSON-RPC call is accounted like a model call: metrics, an execute_tool span for
// tools/call, one request-log record (server, tool, caller, status, duration, sizes, cost).

/** What accounting needs of the call's request. */
export interface AccountedCall {
  readonly request: FastifyRequest;
  readonly catalog: McpCatalog;
  readonly principal: McpPrincipal;
  readonly route: string;
}

/** What a call targets; `costUsd` is set by the handler once the call is charged. */
export interface CallTarget {
  readonly server: string | undefined;
  readonly tool: string | undefined;
  costUsd?: number | undefined;
}

interface McpMetrics {
  readonly calls: Counter<'server' | 'method' | 'outcome'>;
  readonly duration: Histogram<'server' | 'method'>;
  /** The gateway's aigateway_cost_usd_total (provider `mcp:<server>`, model the tool), when registered. */
  readonly cost: Counter<'provider' | 'model'> | undefined;
}

const METHODS = new Set([
  'tools/list',
  'tools/call',
  'prompts/list',
  'prompts/get',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'server/discover',
]);

type Span = { end(attributes?: Readonly<Record<string, string | number | boolean | undefined>>): void };

export class McpAccounting {
  readonly #metrics: McpMetrics;
  readonly #sink: RequestRecordSink | undefined;
  readonly #logger: Logger;

  constructor(registry: Registry, sink: RequestRecordSink | undefined, logger: Logger) {
    this.#metrics = metricsOf(registry);
    this.#sink = sink;
    this.#logger = logger;
  }

  /** Runs one JSON-RPC call and accounts it. */
  async tracked<R>(context: AccountedCall, method: string, target: CallTarget, params: unknown, run: (target: CallTarget) => Promise<R>): Promise<R> {
    const started = process.hrtime.bigint();
    const startedAtMs = Date.now();
    const { server, tool } = target;
    const span = method === 'tools/call' ? context.request.gateway.span?.startChild(`execute_tool ${tool ?? ''}`.trim(), spanAttributes(server, tool)) : undefined;
    let result: R | undefined;
    let failure: RpcError | undefined;
    try {
      result = await run(target);
      return result;
    } catch (error) {
      failure = toMcpError(error);
      throw failure;
    } finally {
      try {
        this.#account(context, method, target, params, result, failure, started, startedAtMs, span);
      } catch (error) {
        this.#logger.error({ err: { message: (error as Error).message } }, 'MCP call accounting failed');
      }
    }
  }

  #account(context: AccountedCall, method: string, target: CallTarget, params: unknown, result: unknown, failure: RpcError | undefined, started: bigint, startedAtMs: number, span: Span | undefined): void {
    const { server, tool, costUsd } = target;
    const latencyMs = Number(process.hrtime.bigint() - started) / 1e6;
    const status = failure === undefined ? 200 : statusOfRpcError(failure.code);
    const errorCode = failure === undefined ? undefined : errorCodeOf(failure.code);
    const serverLabel = server !== undefined && context.catalog.servers.has(server) ? server : 'none';
    const methodLabel = METHODS.has(method) ? method : 'other';
    this.#metrics.calls.inc({ server: serverLabel, method: methodLabel, outcome: failure === undefined ? 'ok' : (errorCode ?? 'error') });
    this.#metrics.duration.observe({ server: serverLabel, method: methodLabel }, latencyMs / 1000);
    // Only priced tools of configured servers reach here with a cost: a bounded label set.
    if (costUsd !== undefined && costUsd > 0 && serverLabel !== 'none') this.#metrics.cost?.inc({ provider: `mcp:${serverLabel}`, model: tool ?? 'none' }, costUsd);
    const isError = failure === undefined && isObject(result) && result['isError'] === true;
    span?.end({ 'error.type': failure === undefined ? (isError ? 'tool_error' : undefined) : (errorCode ?? String(failure.code)), 'aigateway.mcp.status': status });
    const sink = this.#sink;
    if (sink === undefined) return;
    const request = context.request;
    const record: RequestRecord = {
      id: randomUUID(),
      traceId: request.gateway.traceId,
      startedAt: startedAtMs,
      method: 'POST',
      route: context.route,
      status,
      latencyMs,
      ttftMs: undefined,
      apiKeyId: context.principal.keyId,
      workspace: context.principal.workspace,
      configId: undefined,
      targetPath: undefined,
      provider: server === undefined ? undefined : `mcp:${server}`,
      model: tool,
      metadata: {
        ...request.gateway.metadata,
        mcp_method: method,
        ...(server === undefined ? {} : { mcp_server: server }),
        ...(tool === undefined ? {} : { mcp_tool: tool }),
        ...(context.principal.kind === 'oauth' ? { mcp_caller: context.principal.id } : {}),
        mcp_request_bytes: params === undefined ? 0 : Buffer.byteLength(JSON.stringify(params)),
        mcp_response_bytes: result === undefined ? 0 : Buffer.byteLength(serialized(result)),
        ...(isError ? { mcp_tool_error: true } : {}),
      },
      promptTokens: undefined,
      completionTokens: undefined,
      totalTokens: undefined,
      ...(costUsd === undefined ? {} : { costUsd }),
      otelTraceId: request.gateway.span?.traceId,
      cacheStatus: undefined,
      retries: 0,
      guardrailVerdict: failure?.code === MCP_ERROR.guardrailDenied ? 'deny' : undefined,
      errorCode,
    };
    sink(record);
  }
}

/** Results serialized for the record, for the answer to reuse (the same JSON, not built twice). */
const SERIALIZED = new WeakMap<object, string>();

function serialized(result: unknown): string {
  const text = JSON.stringify(result);
  if (isObject(result)) SERIALIZED.set(result, text);
  return text;
}

/** The JSON of a result this module serialized already (taken once), or undefined. */
export function takeSerialized(result: unknown): string | undefined {
  if (!isObject(result)) return undefined;
  const text = SERIALIZED.get(result);
  if (text !== undefined) SERIALIZED.delete(result);
  return text;
}

function spanAttributes(server: string | undefined, tool: string | undefined): Record<string, string> {
  return {
    'gen_ai.operation.name': 'execute_tool',
    ...(tool === undefined ? {} : { 'gen_ai.tool.name': tool }),
    ...(server === undefined ? {} : { 'mcp.server.name': server }),
    'mcp.method.name': 'tools/call',
  };
}

const registered = new WeakMap<Registry, McpMetrics>();

/** MCP series on the gateway's registry; labels are configured server names and a fixed method set. */
function metricsOf(registry: Registry): McpMetrics {
  let metrics = registered.get(registry);
  if (metrics === undefined) {
    const cost = registry.getSingleMetric('aigateway_cost_usd_total');
    metrics = {
      calls: new Counter({ name: 'aigateway_mcp_requests_total', help: 'MCP JSON-RPC requests by server, method and outcome', labelNames: ['server', 'method', 'outcome'], registers: [registry] }),
      duration: new Histogram({
        name: 'aigateway_mcp_request_duration_seconds',
        help: 'MCP JSON-RPC request duration by server and method',
        labelNames: ['server', 'method'],
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
        registers: [registry],
      }),
      cost: cost instanceof Counter ? (cost as Counter<'provider' | 'model'>) : undefined,
    };
    registered.set(registry, metrics);
  }
  return metrics;
}
