import { z } from 'zod';

// The MCP part of the state file: `mcpServers` (one entry per upstream MCP server, the
// operator renders one per MCPServer resource) and `mcp` (gateway-wide settings: OAuth,
// limits). Server names are DNS labels: no "_" and no "+", so the prefixes `<server>__`
// (tools, prompts) and `<server>+` (resource URIs) always split back unambiguously.

export const MCP_SERVER_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
const TOOL_NAME = z.string().min(1).max(128);
const USD_PER_CALL = z.number().min(0).max(1000);

/** Who may use a server (and which of its tools); any matching grant admits the caller. */
export const McpGrantSchema = z.strictObject({
  keys: z.array(z.string().min(1)).optional().describe('Gateway API key ids this grant admits.'),
  workspaces: z.array(z.string().min(1)).optional().describe('Workspaces whose keys (or OAuth callers mapped to them) this grant admits.'),
  scopes: z.array(z.string().min(1)).optional().describe('OAuth callers whose token carries one of these scopes.'),
  tools: z.array(TOOL_NAME).optional().describe("The tools (the server's own names) this grant allows; default: every tool the server exposes."),
});

/** The fields of a server entry (the MCPServer kind derives its spec from them). */
export const McpServerFieldsSchema = z.strictObject({
  name: z.string().regex(MCP_SERVER_NAME, 'must be a DNS label: lower-case letters, digits and "-" (at most 63)').describe('The server name: the prefix of its tools (`<name>__<tool>`) and the path /mcp/<name>.'),
  transport: z.enum(['streamable-http', 'sse', 'stdio']).default('streamable-http').describe('How the gateway reaches the server.'),
  url: z.url({ protocol: /^https?$/ }).optional().describe('The server endpoint (streamable-http, sse).'),
  command: z.string().min(1).optional().describe('The program the gateway starts (stdio; standalone gateways only).'),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).optional().describe('Environment of the stdio process (nothing else of the gateway environment is passed but PATH and HOME).'),
  cwd: z.string().min(1).optional(),
  headers: z
    .record(z.string().regex(HEADER_NAME, 'must be an HTTP header name'), z.string())
    .optional()
    .describe('Headers sent to this server only (credentials: use ${ENV} or the credentials file / Secret).'),
  forwardClientToken: z.boolean().default(false).describe("Send the caller's own Authorization header to this server (default: never)."),
  tools: z
    .strictObject({
      include: z.array(TOOL_NAME).optional().describe('Only these tools are exposed (default: all).'),
      exclude: z.array(TOOL_NAME).optional().describe('These tools are never exposed.'),
      rename: z.record(TOOL_NAME, TOOL_NAME).optional().describe('Exposed names for tools: original → new.'),
    })
    .optional()
    .describe("Which of the server's tools are exposed, and under which names."),
  access: z.array(McpGrantSchema).optional().describe('Who may use this server; default: every gateway key.'),
  input_guardrails: z.array(z.string().min(1)).optional().describe("Saved Guardrails run on every tool call's arguments (a denying one refuses the call)."),
  output_guardrails: z.array(z.string().min(1)).optional().describe("Saved Guardrails run on every tool result's text (a denying one withholds the result)."),
  timeoutMs: z.number().int().min(100).max(600_000).default(60_000).describe('Longest wait for one answer of this server.'),
  price: z
    .strictObject({
      perCall: USD_PER_CALL.optional().describe('USD charged for every tool call of this server (tools without their own price).'),
      tools: z.record(TOOL_NAME, USD_PER_CALL).optional().describe("USD charged per call of these tools (the server's own names); overrides perCall."),
    })
    .optional()
    .describe('Cost of tool calls: recorded in the request log and cost metrics, and charged to cost usage-limit policies (a call they cannot cover is refused).'),
});

export const McpServerEntrySchema = McpServerFieldsSchema.refine((entry) => (entry.transport === 'stdio' ? entry.command !== undefined : entry.url !== undefined), {
  message: 'a stdio server needs command; streamable-http and sse need url',
});

export const McpOAuthSchema = z.strictObject({
  issuer: z.url().describe('The authorization server (the JWT "iss").'),
  jwksUri: z.url({ protocol: /^https?$/ }).optional().describe("The issuer's JWKS (default: <issuer>/.well-known/jwks.json)."),
  audience: z.string().min(1).describe('The JWT "aud" the gateway accepts (its resource identifier).'),
  resource: z.url().optional().describe('The resource identifier in the protected-resource metadata (default: audience).'),
  scopesSupported: z.array(z.string().min(1)).optional(),
  workspaceClaim: z.string().min(1).optional().describe('A claim naming the caller\'s workspace, matched by grants\' workspaces.'),
});

export const McpSettingsSchema = z.strictObject({
  oauth: McpOAuthSchema.optional(),
  /** Largest JSON-RPC message accepted from a client (bytes). */
  maxMessageBytes: z.number().int().min(1024).max(64 * 1024 * 1024).default(4 * 1024 * 1024),
  /** Largest answer read from an upstream for one request (bytes). */
  maxUpstreamBytes: z.number().int().min(1024).max(256 * 1024 * 1024).default(16 * 1024 * 1024),
  /** Most messages in one JSON-RPC batch. */
  maxBatch: z.number().int().min(1).max(1000).default(16),
  /** Lifetime of a gateway MCP session (seconds). */
  sessionTtlSeconds: z.number().int().min(60).max(30 * 86_400).default(86_400),
});

export type McpServerEntry = z.infer<typeof McpServerEntrySchema>;
export type McpGrant = z.infer<typeof McpGrantSchema>;
export type McpSettings = z.infer<typeof McpSettingsSchema>;
export type McpOAuthSettings = z.infer<typeof McpOAuthSchema>;

/** Upstream header values kept apart from the state (the credentials file, a Secret in a cluster). */
export const McpCredentialsSchema = z.record(z.string(), z.strictObject({ headers: z.record(z.string(), z.string()).default({}) }));
