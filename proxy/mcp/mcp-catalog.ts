import { createHash } from 'node:crypto';
import type { GatewayState } from '../config/gateway-state.ts';
import { compileGuardrails, EMPTY_GUARDRAILS, type CompiledGuardrails } from '../guardrails/compile-guardrails.ts';
import { McpSettingsSchema } from './mcp-schema.ts';
import type { McpGrant, McpServerEntry, McpSettings } from './mcp-schema.ts';

// The MCP servers of one state snapshot, compiled once (cached per snapshot): the headers
// each upstream gets, the tool filter and renames, and who may use which tool.
//
// Naming: on /mcp every tool and prompt is `<server>__<name>` and every resource URI
// `<server>+<uri>`; on /mcp/{server} names and URIs are the server's own (after renames).
// Server names cannot hold "_" or "+", so the first "__" / "+" always splits a name back.

export const NAME_SEPARATOR = '__';
export const URI_SEPARATOR = '+';

/** Who is calling: a gateway key, or an OAuth bearer token's subject. */
export interface McpPrincipal {
  /** Stable id bound into the session: `key:<key id>` or `jwt:<issuer>#<sub>`. */
  readonly id: string;
  readonly kind: 'key' | 'oauth';
  readonly keyId: string | undefined;
  readonly workspace: string | undefined;
  /** OAuth scopes of the token (empty for gateway keys). */
  readonly scopes: ReadonlySet<string>;
}

export interface McpServer {
  readonly name: string;
  readonly entry: McpServerEntry;
  /** Headers for this upstream only: the state's, then the credentials file's. */
  readonly headers: Readonly<Record<string, string>>;
  /** Changes whenever anything that defines the upstream connection changes (pooled clients restart). */
  readonly fingerprint: string;
  /** The name a tool is exposed under, or undefined when include/exclude hide it. */
  exposedTool(original: string): string | undefined;
  /** The server's own name of an exposed tool, or undefined. */
  originalTool(exposed: string): string | undefined;
  /** The caller may use this server at all. */
  admits(principal: McpPrincipal): boolean;
  /** The caller may see and call this tool (the server's own name). */
  allowsTool(principal: McpPrincipal, original: string): boolean;
  /** USD per call of this tool (the server's own name), or undefined when unpriced. */
  priceOf(original: string): number | undefined;
  /** input_guardrails on arguments, output_guardrails on results; undefined when none or unusable (then `guardrailProblem`). */
  readonly guardrails: CompiledGuardrails | undefined;
  /** Why the server's guardrails could not be compiled (calls then fail closed). */
  readonly guardrailProblem: string | undefined;
}

export interface McpCatalog {
  readonly servers: ReadonlyMap<string, McpServer>;
  readonly settings: McpSettings;
}

const compiled = new WeakMap<GatewayState, McpCatalog>();

export function mcpCatalog(state: GatewayState): McpCatalog {
  let catalog = compiled.get(state);
  if (catalog === undefined) {
    const servers = new Map<string, McpServer>();
    for (const entry of state.document.mcpServers ?? []) {
      if (!servers.has(entry.name)) servers.set(entry.name, compileServer(entry, state.mcpCredentials?.get(entry.name), state));
    }
    catalog = { servers, settings: state.document.mcp ?? McpSettingsSchema.parse({}) };
    compiled.set(state, catalog);
  }
  return catalog;
}

function compileServer(entry: McpServerEntry, secretHeaders: Readonly<Record<string, string>> | undefined, state: GatewayState): McpServer {
  const headers = { ...entry.headers, ...secretHeaders };
  const include = entry.tools?.include === undefined ? undefined : new Set(entry.tools.include);
  const exclude = new Set(entry.tools?.exclude ?? []);
  const rename = new Map(Object.entries(entry.tools?.rename ?? {}));
  const back = new Map([...rename].map(([original, exposed]) => [exposed, original]));
  const grants = entry.access;
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([entry.transport, entry.url, entry.command, entry.args, entry.env, entry.cwd, headers]))
    .digest('hex')
    .slice(0, 16);
  let guardrails: CompiledGuardrails | undefined;
  let guardrailProblem: string | undefined;
  if (entry.input_guardrails !== undefined || entry.output_guardrails !== undefined) {
    const missing = [...(entry.input_guardrails ?? []), ...(entry.output_guardrails ?? [])].filter((id) => !state.guardrails.has(id));
    if (missing.length > 0) guardrailProblem = `MCP server "${entry.name}" names unknown guardrails: ${missing.join(', ')}`;
    else {
      try {
        guardrails = compileGuardrails({ input_guardrails: entry.input_guardrails, output_guardrails: entry.output_guardrails }, state.guardrails);
      } catch (error) {
        guardrailProblem = `MCP server "${entry.name}": ${(error as Error).message}`;
      }
    }
    if (guardrails === EMPTY_GUARDRAILS) guardrails = undefined;
  }
  const visible = (original: string): boolean => (include === undefined || include.has(original)) && !exclude.has(original);
  return {
    name: entry.name,
    entry,
    headers,
    fingerprint,
    guardrails,
    guardrailProblem,
    exposedTool(original) {
      if (!visible(original)) return undefined;
      const exposed = rename.get(original) ?? original;
      // A tool renamed onto another's name would shadow it: the renamed one wins.
      if (exposed === original && back.has(original) && back.get(original) !== original) return undefined;
      return exposed;
    },
    originalTool(exposed) {
      const original = back.get(exposed) ?? (rename.has(exposed) ? undefined : exposed);
      return original !== undefined && visible(original) ? original : undefined;
    },
    priceOf: (original) => {
      const tools = entry.price?.tools;
      return tools !== undefined && Object.hasOwn(tools, original) ? tools[original] : entry.price?.perCall;
    },
    admits: (principal) => grants === undefined || grants.some((grant) => grantMatches(grant, principal)),
    allowsTool(principal, original) {
      if (!visible(original)) return false;
      if (grants === undefined) return true;
      return grants.some((grant) => grantMatches(grant, principal) && (grant.tools === undefined || grant.tools.includes(original)));
    },
  };
}

/** A grant naming nobody admits everybody (it only narrows tools). */
function grantMatches(grant: McpGrant, principal: McpPrincipal): boolean {
  if (grant.keys === undefined && grant.workspaces === undefined && grant.scopes === undefined) return true;
  if (principal.keyId !== undefined && grant.keys?.includes(principal.keyId) === true) return true;
  if (principal.workspace !== undefined && grant.workspaces?.includes(principal.workspace) === true) return true;
  return grant.scopes?.some((scope) => principal.scopes.has(scope)) === true;
}

/** Splits `<server>__<name>`; undefined when it has no server prefix. */
export function splitPrefixed(name: string, separator: string): { server: string; name: string } | undefined {
  const at = name.indexOf(separator);
  if (at <= 0) return undefined;
  return { server: name.slice(0, at), name: name.slice(at + separator.length) };
}
