import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyReply } from 'fastify';
import { isGatewayError } from '../errors.ts';
import { UpstreamFailure } from './mcp-upstream.ts';

// The gateway's JSON-RPC errors: codes, the error the handlers throw, and how each maps to an
// HTTP status (request log) and an AIGW_ERR code.

/** JSON-RPC error codes of the gateway (besides the standard ones and the upstream's own). */
export const MCP_ERROR = {
  upstreamUnavailable: -32050,
  upstreamTimeout: -32051,
  upstreamTooLarge: -32052,
  rateLimited: -32029,
  budgetExceeded: -32028,
  forbidden: -32003,
  sessionNotFound: -32001,
  guardrailDenied: -32004,
  /** 2026-07-28: Mcp-Method / Mcp-Name / MCP-Protocol-Version missing or not matching the body. */
  headerMismatch: -32020,
  /** 2026-07-28: the requested protocol version is not served (data: supported, requested). */
  unsupportedProtocolVersion: -32022,
} as const;

/**
 * A JSON-RPC error for the SDK to send: its code, message and data as they are (McpError
 * would prefix the message with its code, and the client prefixes it again).
 */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }
}

export function toMcpError(error: unknown): RpcError {
  if (error instanceof RpcError) return error;
  if (error instanceof McpError) return new RpcError(error.code, error.message.replace(/^MCP error -?\d+: /, ''), error.data);
  if (error instanceof UpstreamFailure) {
    switch (error.kind) {
      case 'error':
        return new RpcError(error.rpcCode ?? ErrorCode.InternalError, error.message, error.rpcData);
      case 'timeout':
        return new RpcError(MCP_ERROR.upstreamTimeout, error.message);
      case 'too_large':
        return new RpcError(MCP_ERROR.upstreamTooLarge, error.message);
      default:
        return new RpcError(MCP_ERROR.upstreamUnavailable, error.message);
    }
  }
  const coded = error as { code?: unknown; message?: unknown; data?: unknown };
  if (error instanceof Error && typeof coded.code === 'number' && Number.isInteger(coded.code)) return new RpcError(coded.code, error.message, coded.data);
  if (isGatewayError(error)) return new RpcError(error.status === 429 ? MCP_ERROR.rateLimited : ErrorCode.InternalError, error.message);
  return new RpcError(ErrorCode.InternalError, 'Internal error.');
}

export function statusOfRpcError(code: number): number {
  switch (code) {
    case ErrorCode.InvalidParams:
    case ErrorCode.InvalidRequest:
    case ErrorCode.MethodNotFound:
    case MCP_ERROR.headerMismatch:
    case MCP_ERROR.unsupportedProtocolVersion:
      return 400;
    case MCP_ERROR.rateLimited:
    case MCP_ERROR.budgetExceeded:
      return 429;
    case MCP_ERROR.forbidden:
      return 403;
    case MCP_ERROR.guardrailDenied:
      return 446;
    case MCP_ERROR.upstreamTimeout:
      return 504;
    case MCP_ERROR.upstreamUnavailable:
    case MCP_ERROR.upstreamTooLarge:
      return 502;
    default:
      return 500;
  }
}

export function errorCodeOf(code: number): string | undefined {
  switch (code) {
    case ErrorCode.InvalidParams:
      return 'AIGW_ERR_INVALID_BODY';
    case MCP_ERROR.rateLimited:
      return 'AIGW_ERR_RATE_LIMITED';
    case MCP_ERROR.budgetExceeded:
      return 'AIGW_ERR_BUDGET_EXCEEDED';
    case MCP_ERROR.guardrailDenied:
      return 'AIGW_ERR_GUARDRAIL_DENIED';
    case MCP_ERROR.upstreamTimeout:
      return 'AIGW_ERR_UPSTREAM_TIMEOUT';
    case MCP_ERROR.upstreamUnavailable:
      return 'AIGW_ERR_UPSTREAM_UNREACHABLE';
    case MCP_ERROR.upstreamTooLarge:
      return 'AIGW_ERR_UPSTREAM_INVALID_RESPONSE';
    default:
      return undefined;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function rpcErrorReply(reply: FastifyReply, status: number, code: number, message: string, id: unknown = null, data?: unknown): FastifyReply {
  const error = data === undefined ? { code, message } : { code, message, data };
  return reply.code(status).header('content-type', 'application/json').send(JSON.stringify({ jsonrpc: '2.0', error, id }));
}
