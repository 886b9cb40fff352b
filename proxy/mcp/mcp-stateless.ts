import { ErrorCode, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyRequest } from 'fastify';
import { isObject, MCP_ERROR, RpcError } from './mcp-errors.ts';

// The 2026-07-28 ("modern", stateless) revision where the gateway speaks it (docs/mcp.md):
// a request carries its protocol version in `_meta` and the MCP-Protocol-Version header, no
// initialize and no session; `server/discover` says what the gateway serves; the Mcp-Method /
// Mcp-Name headers mirror the body and must match it (HeaderMismatch, -32020, otherwise).

export const MODERN_VERSION = '2026-07-28';
export const META_VERSION = 'io.modelcontextprotocol/protocolVersion';
/** Methods of the modern revision the gateway serves (subscriptions/listen and MRTR are not); mcp-plugin.ts keeps a copy. */
export const MODERN_METHODS: ReadonlySet<string> = new Set(['server/discover', 'tools/list', 'tools/call', 'prompts/list', 'prompts/get', 'resources/list', 'resources/templates/list', 'resources/read']);
/** Methods whose Mcp-Name header mirrors params.name / params.uri. */
const NAMED: Readonly<Record<string, 'name' | 'uri'>> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri', 'resources/subscribe': 'uri', 'resources/unsubscribe': 'uri' };
const MAX_HEADER_CHARS = 4096;

/** The protocol version a message's `_meta` names, if any. */
export function metaVersionOf(message: unknown): unknown {
  if (!isObject(message)) return undefined;
  const params = message['params'];
  const meta = isObject(params) ? params['_meta'] : undefined;
  return isObject(meta) ? meta[META_VERSION] : undefined;
}

/**
 * Whether a POST speaks the modern revision: the MCP-Protocol-Version header says so, or
 * the body's `_meta` carries a protocol version (then the header must agree).
 */
export function isModern(request: FastifyRequest, body: unknown): boolean {
  if (request.headers['mcp-protocol-version'] === MODERN_VERSION) return true;
  return !Array.isArray(body) && metaVersionOf(body) !== undefined;
}

/** The value of an Mcp-Name header: as sent, or decoded from the `=?base64?…?=` sentinel form. */
export function decodeHeaderValue(value: string): string | undefined {
  if (!value.startsWith('=?base64?') || !value.endsWith('?=')) return value;
  const encoded = value.slice('=?base64?'.length, -2);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(encoded)) return undefined;
  return Buffer.from(encoded, 'base64').toString('utf8');
}

function headerOf(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Checks the mirrored headers against the body. `required`: a modern request must carry
 * Mcp-Method (and Mcp-Name where the method names something); a legacy one is checked
 * only for the headers it sent. Throws HeaderMismatch (-32020, HTTP 400).
 */
export function checkMirroredHeaders(request: FastifyRequest, body: unknown, required: boolean): void {
  const method = headerOf(request, 'mcp-method');
  const name = headerOf(request, 'mcp-name');
  if (method === undefined && name === undefined && !required) return;
  if (Array.isArray(body)) throw new RpcError(MCP_ERROR.headerMismatch, 'Header mismatch: Mcp-Method and Mcp-Name describe a single message, not a batch.');
  if (!isObject(body)) return;
  if ((method?.length ?? 0) > MAX_HEADER_CHARS || (name?.length ?? 0) > MAX_HEADER_CHARS) throw new RpcError(MCP_ERROR.headerMismatch, 'Header mismatch: a mirrored header is too long.');
  const bodyMethod = body['method'];
  if (method === undefined) {
    if (required) throw new RpcError(MCP_ERROR.headerMismatch, 'Header mismatch: the Mcp-Method header is required.');
  } else if (method !== bodyMethod) {
    throw new RpcError(MCP_ERROR.headerMismatch, `Header mismatch: Mcp-Method header value '${method.slice(0, 100)}' does not match body value '${String(bodyMethod).slice(0, 100)}'.`);
  }
  const field = typeof bodyMethod === 'string' && Object.hasOwn(NAMED, bodyMethod) ? NAMED[bodyMethod] : undefined;
  const params = body['params'];
  const bodyName = field === undefined || !isObject(params) ? undefined : params[field];
  if (name === undefined) {
    if (required && typeof bodyName === 'string') throw new RpcError(MCP_ERROR.headerMismatch, `Header mismatch: the Mcp-Name header is required for ${String(bodyMethod)}.`);
    return;
  }
  const decoded = decodeHeaderValue(name);
  if (decoded === undefined) throw new RpcError(MCP_ERROR.headerMismatch, 'Header mismatch: the Mcp-Name header is not valid base64.');
  if (decoded !== bodyName) throw new RpcError(MCP_ERROR.headerMismatch, `Header mismatch: Mcp-Name header value '${decoded.slice(0, 100)}' does not match body value '${String(bodyName).slice(0, 100)}'.`);
}

/**
 * A modern request's version checks: the body's `_meta` names a version the gateway serves
 * statelessly and the MCP-Protocol-Version header agrees with it.
 */
export function checkModernVersion(request: FastifyRequest, body: unknown): void {
  if (Array.isArray(body)) throw new RpcError(ErrorCode.InvalidRequest, 'Invalid Request: a 2026-07-28 request is a single JSON-RPC message, not a batch.');
  const header = headerOf(request, 'mcp-protocol-version');
  const meta = metaVersionOf(body);
  if (header === undefined) throw new RpcError(MCP_ERROR.headerMismatch, 'Header mismatch: the MCP-Protocol-Version header is required.');
  if (meta !== undefined && meta !== header) {
    throw new RpcError(MCP_ERROR.headerMismatch, `Header mismatch: MCP-Protocol-Version header value '${header.slice(0, 40)}' does not match _meta value '${String(meta).slice(0, 40)}'.`);
  }
  const requested = meta ?? header;
  if (requested !== MODERN_VERSION) {
    throw new RpcError(MCP_ERROR.unsupportedProtocolVersion, 'Unsupported protocol version', { supported: supportedVersions(), requested: String(requested).slice(0, 40) });
  }
  if (meta === undefined && isObject(body) && 'id' in body) {
    throw new RpcError(MCP_ERROR.headerMismatch, `Header mismatch: the request's _meta must carry ${META_VERSION} (the MCP-Protocol-Version header mirrors it).`);
  }
}

/** Every revision the gateway speaks: the stateless one, then those with initialize (the SDK's). */
export function supportedVersions(): string[] {
  return [MODERN_VERSION, ...SUPPORTED_PROTOCOL_VERSIONS];
}

/** server/discover: versions, capabilities and identity. */
export function discoverResult(modern: boolean, legacyCapabilities: Record<string, unknown>, info: Record<string, unknown>): Record<string, unknown> {
  // Stateless callers get no change notifications (that takes subscriptions/listen, not served).
  const capabilities = modern ? { tools: {}, prompts: {}, resources: {} } : legacyCapabilities;
  return {
    supportedVersions: supportedVersions(),
    capabilities,
    serverInfo: info,
    instructions: 'aigateway MCP gateway: tools, prompts and resources of the MCP servers this caller may use.',
  };
}
