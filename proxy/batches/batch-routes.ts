import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import { HEADER } from '../gateway-headers.ts';
import { isGatewayFileId, type FileStore } from '../files/file-store.ts';
import { selectRoute } from '../routing/select-route.ts';
import { BATCH_LIST_RULES, parseCreateBatch } from './batch-request.ts';
import { isGatewayBatchId, newGatewayBatchId, toBatchObject, type BatchStore } from './batch-store.ts';
import { mergeLists } from './merged-list.ts';
import { callProvider, forwardingTarget, optionalForwardingTarget, readProviderJson, relayProviderAnswer } from './provider-forwarding.ts';
import { parseListQuery } from './request-validation.ts';
import { admitCall } from './route-policies.ts';
import type { PolicyRuntime } from '../endpoints/policy-admission.ts';
import type { BudgetRuntime } from '../budgets/budget-admission.ts';
import { relayedHeaders } from '../upstream/guarded-call.ts';
import { chargeForwardedBatch, chargesForwardedBatches, recordBatchCreator } from './forwarded-batch-charging.ts';

// /v1/batches. completion_window "immediate" → a gateway-managed batch (gwbatch-…) run by
// the gateway's own pipeline; "24h" → the provider's batch API. Reads and cancels of
// gwbatch- ids are answered from the store; other ids go to the provider.

/** How long an immediate batch may run before its unstarted lines expire. */
export const IMMEDIATE_BATCH_EXPIRY_SECONDS = 24 * 3600;

export interface BatchRouteDeps {
  readonly batches: BatchStore;
  readonly files: FileStore;
  readonly dispatcher: Dispatcher;
  /** Nudges the worker after a create or cancel. */
  readonly wake: () => void;
  readonly now: () => number;
  /** Rate limits: every call is counted (route-policies.ts); undefined counts nothing. */
  readonly policies?: PolicyRuntime;
  /** Budgets: a forwarded batch's creator is recorded, and once found finished it is charged by its results; undefined charges nothing. */
  readonly budgets?: BudgetRuntime;
}

const SCOPE = { gatewayScope: 'inference' } as const;

// Never stored with a batch: connection-level headers and the body's own framing.
const NOT_STORED = new Set([
  'host',
  'connection',
  'content-length',
  'content-type',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'accept-encoding',
  HEADER.traceId,
]);

export function registerBatchRoutes(app: FastifyInstance, deps: BatchRouteDeps): void {
  app.post('/v1/batches', { config: SCOPE }, (request, reply) => createBatch(deps, request, reply));

  app.get('/v1/batches', { config: SCOPE }, async (request, reply) => {
    const query = parseListQuery(request.query, BATCH_LIST_RULES);
    const workspace = workspaceOf(request);
    const target = query.after !== undefined && !isGatewayBatchId(query.after) ? forwardingTarget(request, '/v1/batches') : optionalForwardingTarget(request, '/v1/batches');
    await admitCall(deps.policies, request, target?.provider);
    const list = await mergeLists({
      query,
      isGatewayId: isGatewayBatchId,
      gatewayPage: (after, limit) => deps.batches.list(workspace, { after, limit }).then((page) => ({ ...page, items: page.items.map(toBatchObject) })),
      providerPage:
        target === undefined
          ? undefined
          : async (after, limit) => {
              const search = new URLSearchParams({ limit: String(limit) });
              if (after !== undefined) search.set('after', after);
              return readProviderJson(target, await callProvider(deps.dispatcher, target, { method: 'GET', path: 'batches', query: search }));
            },
    });
    if (target !== undefined) reply.header(HEADER.provider, target.provider);
    return reply.send(list);
  });

  app.get<{ Params: { id: string } }>('/v1/batches/:id', { config: SCOPE }, async (request, reply) => {
    const { id } = request.params;
    if (isGatewayBatchId(id)) {
      await admitCall(deps.policies, request, undefined);
      return reply.send(toBatchObject(await requireBatch(deps, request, id)));
    }
    const target = forwardingTarget(request, '/v1/batches/{batch_id}');
    await admitCall(deps.policies, request, target.provider);
    const answer = await callProvider(deps.dispatcher, target, { method: 'GET', path: `batches/${encodeURIComponent(id)}` });
    const budgets = deps.budgets;
    if (!chargesForwardedBatches(budgets, request) || answer.statusCode < 200 || answer.statusCode >= 300) return relayProviderAnswer(reply, target, answer);
    // Under a budget the batch object is read (it is small) to see whether it finished.
    const headers = relayedHeaders(answer.headers, answer.redact);
    for (const name of ['content-length', 'content-encoding', 'content-type']) delete headers[name];
    const batch = await readProviderJson(target, answer);
    chargeForwardedBatch({ runtime: budgets, dispatcher: deps.dispatcher, now: deps.now }, request, target, batch).catch((error: unknown) => {
      request.log.warn({ batch: id, err: { message: (error as Error).message } }, 'could not charge a forwarded batch');
    });
    return reply.headers(headers).header(HEADER.provider, target.provider).send(batch);
  });

  app.post<{ Params: { id: string } }>('/v1/batches/:id/cancel', { config: SCOPE }, async (request, reply) => {
    const { id } = request.params;
    if (!isGatewayBatchId(id)) {
      const target = forwardingTarget(request, '/v1/batches/{batch_id}/cancel');
      await admitCall(deps.policies, request, target.provider);
      const answer = await callProvider(deps.dispatcher, target, { method: 'POST', path: `batches/${encodeURIComponent(id)}/cancel` });
      return relayProviderAnswer(reply, target, answer);
    }
    await admitCall(deps.policies, request, undefined);
    const result = await deps.batches.cancel(workspaceOf(request), id, deps.now());
    if (result.kind === 'not-found') throw batchNotFound(id);
    if (result.kind === 'not-cancellable') {
      throw new GatewayError('AIGW_ERR_INVALID_BODY', `Batch ${id} is ${result.batch.status} and can no longer be cancelled.`, {
        status: 409,
        param: 'batch_id',
      });
    }
    deps.wake();
    return reply.send(toBatchObject(result.batch));
  });
}

async function createBatch(deps: BatchRouteDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const body = parseCreateBatch(request.body);
  if (body.completionWindow === '24h') {
    if (isGatewayFileId(body.inputFileId)) {
      throw new GatewayError(
        'AIGW_ERR_INVALID_BODY',
        `${body.inputFileId} is a gateway-managed file: use completion_window "immediate" with it, or upload the file to the provider for a "24h" batch.`,
        { param: 'input_file_id' },
      );
    }
    const target = forwardingTarget(request, '/v1/batches');
    await admitCall(deps.policies, request, target.provider);
    const answer = await callProvider(deps.dispatcher, target, {
      method: 'POST',
      path: 'batches',
      body: request.rawBody,
      headers: { 'content-type': 'application/json' },
    });
    const store = deps.budgets?.budgets?.store;
    if (store === undefined || answer.statusCode < 200 || answer.statusCode >= 300) return relayProviderAnswer(reply, target, answer);
    // The batch object is read (it is small) to record who created it: its results are charged to them
    // (recorded even with no usage-limit policy yet, so a policy added later charges the creator too).
    const headers = relayedHeaders(answer.headers, answer.redact);
    for (const name of ['content-length', 'content-encoding', 'content-type']) delete headers[name];
    const batch = await readProviderJson(target, answer);
    await recordBatchCreator(store, request, target, batch);
    return reply.headers(headers).header(HEADER.provider, target.provider).send(batch);
  }
  // Gateway-managed: the lines will run with this request's headers, so they must route now.
  const selection = selectRoute(request.headers, request.gateway.state, { apiKey: request.gateway.apiKey, model: undefined });
  request.gateway.configId = selection.configId;
  await admitCall(deps.policies, request, undefined);
  if (!isGatewayFileId(body.inputFileId)) {
    throw new GatewayError(
      'AIGW_ERR_INVALID_BODY',
      `completion_window "immediate" runs in the gateway and needs a gateway-managed input file (gwfile-…); upload it with ${FILE_STORAGE_HINT}.`,
      { param: 'input_file_id' },
    );
  }
  const workspace = workspaceOf(request);
  const file = await deps.files.get(workspace, body.inputFileId);
  if (file === undefined) throw new GatewayError('AIGW_ERR_INVALID_BODY', `No gateway-managed file ${body.inputFileId}.`, { param: 'input_file_id' });
  if (file.purpose !== 'batch') {
    throw new GatewayError('AIGW_ERR_INVALID_BODY', `File ${file.id} has purpose "${file.purpose}"; a batch input needs purpose "batch".`, {
      param: 'input_file_id',
    });
  }
  const nowMs = deps.now();
  const batch = await deps.batches.create({
    id: newGatewayBatchId(),
    workspace,
    endpoint: body.endpoint,
    inputFileId: file.id,
    metadata: body.metadata,
    headers: storableHeaders(request.headers),
    createdMs: nowMs,
    expiresAt: Math.floor(nowMs / 1000) + IMMEDIATE_BATCH_EXPIRY_SECONDS,
  });
  deps.wake();
  return reply.send(toBatchObject(batch));
}

const FILE_STORAGE_HINT = 'POST /v1/files, purpose "batch" and header x-gateway-file-storage: gateway';

async function requireBatch(deps: BatchRouteDeps, request: FastifyRequest, id: string) {
  const batch = await deps.batches.get(workspaceOf(request), id);
  if (batch === undefined) throw batchNotFound(id);
  return batch;
}

function batchNotFound(id: string): GatewayError {
  return new GatewayError('AIGW_ERR_NOT_FOUND', `No batch found with id '${id}'.`, { param: 'batch_id' });
}

/** The workspace of the calling API key: gateway-managed objects are visible within it only. */
export function workspaceOf(request: FastifyRequest): string {
  return request.gateway.apiKey?.workspace ?? 'default';
}

/** The request's headers as each batch line will carry them (credentials included, kept until the batch ends). */
export function storableHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const stored: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || NOT_STORED.has(name)) continue;
    stored[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return stored;
}
