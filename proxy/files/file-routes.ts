import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { GatewayError } from '../errors.ts';
import { HEADER, headerValue } from '../gateway-headers.ts';
import { workspaceOf } from '../batches/batch-routes.ts';
import { mergeLists } from '../batches/merged-list.ts';
import { callProvider, forwardingTarget, optionalForwardingTarget, readProviderJson, relayProviderAnswer } from '../batches/provider-forwarding.ts';
import { invalid, optionalQueryString, parseListQuery } from '../batches/request-validation.ts';
import { admitCall } from '../batches/route-policies.ts';
import type { PolicyRuntime } from '../endpoints/policy-admission.ts';
import { isGatewayFileId, toFileObject, type FileStore } from './file-store.ts';
import { storeGatewayUpload } from './gateway-file-upload.ts';

// /v1/files. An upload is kept by the gateway when it says `x-gateway-file-storage: gateway`
// (batch inputs for completion_window "immediate"); otherwise it streams through to the
// provider untouched. gwfile- ids are served from the store, other ids by the provider.

/** Request header choosing where an upload (or a list) lives: `provider` (default) or `gateway`. */
export const FILE_STORAGE_HEADER = 'x-gateway-file-storage';

/** GET /v1/files: OpenAI's limit is 1–10 000, default 10 000. */
const FILE_LIST_RULES = { defaultLimit: 10_000, maxLimit: 10_000 } as const;

export interface FileRouteDeps {
  readonly files: FileStore;
  readonly dispatcher: Dispatcher;
  readonly now: () => number;
  readonly maxFileBytes: number;
  /** Rate limits: every call is counted (route-policies.ts); undefined counts nothing. */
  readonly policies?: PolicyRuntime;
}

const SCOPE = { gatewayScope: 'inference' } as const;

export function registerFileRoutes(app: FastifyInstance, deps: FileRouteDeps): void {
  app.post('/v1/files', { config: SCOPE }, (request, reply) => uploadFile(deps, request, reply));

  app.get('/v1/files', { config: SCOPE }, async (request, reply) => {
    const values = (request.query ?? {}) as Record<string, unknown>;
    const query = parseListQuery(values, FILE_LIST_RULES);
    const purpose = optionalQueryString(values, 'purpose');
    const order = optionalQueryString(values, 'order') ?? 'desc';
    if (order !== 'asc' && order !== 'desc') throw invalid('order must be asc or desc.', 'order');
    const gatewayOnly = storage(request) === 'gateway';
    const providerCursor = query.after !== undefined && !isGatewayFileId(query.after);
    const target = gatewayOnly ? undefined : providerCursor ? forwardingTarget(request, '/v1/files') : optionalForwardingTarget(request, '/v1/files');
    const workspace = workspaceOf(request);
    await admitCall(deps.policies, request, target?.provider);
    const list = await mergeLists({
      query,
      isGatewayId: isGatewayFileId,
      gatewayPage: async (after, limit) => {
        const page = await deps.files.list(workspace, { after, limit, order, purpose });
        return { items: page.items.map(toFileObject), hasMore: page.hasMore };
      },
      providerPage:
        target === undefined
          ? undefined
          : async (after, limit) => {
              const search = new URLSearchParams({ limit: String(limit), order });
              if (after !== undefined) search.set('after', after);
              if (purpose !== undefined) search.set('purpose', purpose);
              return readProviderJson(target, await callProvider(deps.dispatcher, target, { method: 'GET', path: 'files', query: search }));
            },
    });
    if (target !== undefined) reply.header(HEADER.provider, target.provider);
    return reply.send(list);
  });

  app.get<{ Params: { id: string } }>('/v1/files/:id', { config: SCOPE }, async (request, reply) => {
    const { id } = request.params;
    if (isGatewayFileId(id)) {
      await admitCall(deps.policies, request, undefined);
      return reply.send(toFileObject(await requireFile(deps, request, id)));
    }
    return forward(deps, request, reply, 'GET', `files/${encodeURIComponent(id)}`, '/v1/files/{file_id}');
  });

  app.get<{ Params: { id: string } }>('/v1/files/:id/content', { config: SCOPE }, async (request, reply) => {
    const { id } = request.params;
    if (!isGatewayFileId(id)) return forward(deps, request, reply, 'GET', `files/${encodeURIComponent(id)}/content`, '/v1/files/{file_id}/content');
    await admitCall(deps.policies, request, undefined);
    const file = await requireFile(deps, request, id);
    reply.header('content-type', 'application/octet-stream');
    reply.header('content-length', String(file.bytes));
    reply.header('content-disposition', `attachment; filename="${file.filename.replace(/["\\\r\n]/g, '_')}"`);
    return reply.send(Readable.from(deps.files.readContent(id), { objectMode: false }));
  });

  app.delete<{ Params: { id: string } }>('/v1/files/:id', { config: SCOPE }, async (request, reply) => {
    const { id } = request.params;
    if (!isGatewayFileId(id)) return forward(deps, request, reply, 'DELETE', `files/${encodeURIComponent(id)}`, '/v1/files/{file_id}');
    await admitCall(deps.policies, request, undefined);
    if (!(await deps.files.delete(workspaceOf(request), id))) throw fileNotFound(id);
    return reply.send({ id, object: 'file', deleted: true });
  });
}

async function uploadFile(deps: FileRouteDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const contentType = headerValue(request.headers['content-type']);
  if (contentType === undefined || !/^multipart\/form-data/i.test(contentType)) {
    throw new GatewayError('AIGW_ERR_UNSUPPORTED_MEDIA_TYPE', 'File uploads are multipart/form-data (fields file and purpose).', { param: 'content-type' });
  }
  if (storage(request) === 'gateway') {
    await admitCall(deps.policies, request, undefined);
    const file = await storeGatewayUpload(deps.files, {
      body: request.raw,
      contentType,
      workspace: workspaceOf(request),
      nowMs: deps.now(),
      maxFileBytes: deps.maxFileBytes,
    });
    return reply.send(toFileObject(file));
  }
  const target = forwardingTarget(request, '/v1/files');
  await admitCall(deps.policies, request, target.provider);
  const headers: Record<string, string> = { 'content-type': contentType };
  const length = headerValue(request.headers['content-length']);
  if (length !== undefined) headers['content-length'] = length;
  // The multipart body streams through as it arrives; the gateway never buffers it.
  const answer = await callProvider(deps.dispatcher, target, { method: 'POST', path: 'files', body: request.raw, headers });
  return relayProviderAnswer(reply, target, answer);
}

async function forward(
  deps: FileRouteDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  method: 'GET' | 'DELETE',
  path: string,
  route: string,
): Promise<FastifyReply> {
  const target = forwardingTarget(request, route);
  await admitCall(deps.policies, request, target.provider);
  return relayProviderAnswer(reply, target, await callProvider(deps.dispatcher, target, { method, path }));
}

function storage(request: FastifyRequest): 'gateway' | 'provider' {
  const value = headerValue(request.headers[FILE_STORAGE_HEADER])?.trim().toLowerCase();
  if (value === undefined || value === '' || value === 'provider') return 'provider';
  if (value === 'gateway') return 'gateway';
  throw new GatewayError('AIGW_ERR_INVALID_HEADER', `${FILE_STORAGE_HEADER} must be gateway or provider.`, { param: FILE_STORAGE_HEADER });
}

async function requireFile(deps: FileRouteDeps, request: FastifyRequest, id: string) {
  const file = await deps.files.get(workspaceOf(request), id);
  if (file === undefined) throw fileNotFound(id);
  return file;
}

function fileNotFound(id: string): GatewayError {
  return new GatewayError('AIGW_ERR_NOT_FOUND', `No such File object: ${id}`, { param: 'file_id' });
}
