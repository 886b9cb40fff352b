import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

// A gateway MCP session lives in its id: the caller it belongs to, the servers it reaches
// and each upstream's own session id, sealed with AES-256-GCM. Any replica holding the same
// key opens it, so no sticky sessions and no shared store are needed. The key is derived
// from AIGATEWAY_SECRET_KEY (a label keeps it apart from the batch-credential key).

export interface UpstreamSession {
  /** The upstream's Mcp-Session-Id (streamable HTTP); undefined for servers without one (stdio, SSE, stateless). */
  readonly id: string | undefined;
  /** The protocol revision the upstream agreed to. */
  readonly version: string;
}

export interface McpSession {
  /** Who opened it (`key:<id>` or `jwt:<sub>`); every later request must be the same caller. */
  readonly principal: string;
  /** The one server of /mcp/{server}, or undefined for /mcp (all the caller may use). */
  readonly scope: string | undefined;
  /** The protocol revision agreed with the client. */
  readonly version: string;
  /** Upstream sessions by server name; a server missing here was unreachable at initialize. */
  readonly upstreams: Readonly<Record<string, UpstreamSession>>;
  /** Expiry, epoch ms. */
  readonly expiresAt: number;
}

const AAD = Buffer.from('aigateway-mcp-session-v1', 'utf8');
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Longest session id accepted: a forged giant header costs nothing to refuse. */
export const MAX_SESSION_ID_CHARS = 8192;

export class McpSessionSeal {
  readonly #key: Buffer;

  constructor(secret: string | Buffer) {
    this.#key = createHash('sha256').update('aigateway mcp session\u0000').update(secret).digest();
  }

  seal(session: McpSession): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(AAD);
    const compact = { p: session.principal, s: session.scope, v: session.version, e: session.expiresAt, u: Object.entries(session.upstreams).map(([name, up]) => [name, up.id ?? null, up.version]) };
    const body = Buffer.concat([cipher.update(JSON.stringify(compact), 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
  }

  /** The session, or undefined when the id does not open (forged, other key, tampered) or has expired. */
  open(id: string, now: number): McpSession | undefined {
    if (id.length > MAX_SESSION_ID_CHARS || !/^[A-Za-z0-9_-]+$/.test(id)) return undefined;
    const raw = Buffer.from(id, 'base64url');
    if (raw.length <= IV_BYTES + TAG_BYTES) return undefined;
    let compact: { p?: unknown; s?: unknown; v?: unknown; e?: unknown; u?: unknown };
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(AAD);
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      compact = JSON.parse(Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8')) as typeof compact;
    } catch {
      return undefined;
    }
    if (typeof compact.p !== 'string' || typeof compact.v !== 'string' || typeof compact.e !== 'number' || !Array.isArray(compact.u)) return undefined;
    if (compact.e <= now) return undefined;
    const upstreams: Record<string, UpstreamSession> = {};
    for (const entry of compact.u as unknown[]) {
      if (!Array.isArray(entry)) return undefined;
      const [name, upstreamId, version] = entry as unknown[];
      if (typeof name !== 'string' || typeof version !== 'string' || (upstreamId !== null && typeof upstreamId !== 'string')) return undefined;
      upstreams[name] = { id: upstreamId ?? undefined, version };
    }
    return { principal: compact.p, scope: typeof compact.s === 'string' ? compact.s : undefined, version: compact.v, expiresAt: compact.e, upstreams };
  }
}
