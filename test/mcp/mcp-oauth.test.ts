// OAuth 2.1 on /mcp: protected-resource metadata (RFC 9728), bearer JWTs verified against
// the issuer's JWKS (signature, issuer, audience, expiry), scopes mapped to tools; the
// client's token never goes upstream unless the server opts in.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { baseState, startHarness, type Harness } from '../helpers/gateway-harness.ts';
import { listen, startEverything, type EverythingUpstream } from './upstreams.ts';

const ISSUER = 'https://issuer.example.test';
const AUDIENCE = 'https://gateway.example.test/mcp';

let jwks: Server;
let signingKey: CryptoKey;
let otherKey: CryptoKey;
let everything: EverythingUpstream;
let harness: Harness;

async function token(claims: Record<string, unknown>, options: { key?: CryptoKey; issuer?: string; audience?: string; expiresIn?: string | number } = {}): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuer(options.issuer ?? ISSUER)
    .setAudience(options.audience ?? AUDIENCE)
    .setSubject('agent-7')
    .setIssuedAt()
    .setExpirationTime(options.expiresIn ?? '5m')
    .sign(options.key ?? signingKey);
}

async function client(bearer: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${harness.gateway.origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } });
  const mcp = new Client({ name: 'oauth-test', version: '1' });
  await mcp.connect(transport);
  return mcp;
}

async function initializeStatus(bearer: string): Promise<number> {
  const response = await fetch(`${harness.gateway.origin}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
  });
  await response.body?.cancel();
  if (response.status === 401) assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer resource_metadata="/, 'every 401 points at the metadata');
  return response.status;
}

before(async () => {
  const pair = await generateKeyPair('RS256');
  signingKey = pair.privateKey;
  otherKey = (await generateKeyPair('RS256')).privateKey;
  const publicJwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  jwks = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [publicJwk] })));
  const jwksOrigin = await listen(jwks);
  everything = await startEverything();
  harness = await startHarness({
    state: baseState({
      mcp: { oauth: { issuer: ISSUER, jwksUri: `${jwksOrigin}/jwks`, audience: AUDIENCE, scopesSupported: ['mcp:echo'] } },
      mcpServers: [{ name: 'everything', url: everything.url, access: [{ scopes: ['mcp:echo'], tools: ['echo'] }, { scopes: ['mcp:all'] }] }],
    }),
  });
});

after(async () => {
  await harness?.close();
  await everything?.close();
  jwks?.closeAllConnections();
  jwks?.close();
});

describe('MCP OAuth 2.1', () => {
  test('protected-resource metadata is public and names the issuer', async () => {
    const response = await fetch(`${harness.gateway.origin}/.well-known/oauth-protected-resource/mcp`);
    assert.equal(response.status, 200);
    const metadata = (await response.json()) as Record<string, unknown>;
    assert.equal(metadata['resource'], AUDIENCE);
    assert.deepEqual(metadata['authorization_servers'], [ISSUER]);
    assert.deepEqual(metadata['scopes_supported'], ['mcp:echo']);
  });

  test('a 401 points at the metadata', async () => {
    const response = await fetch(`${harness.gateway.origin}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(response.status, 401);
    assert.match(response.headers.get('www-authenticate') ?? '', /^Bearer resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"$/);
  });

  test('a valid token\'s scopes decide the tools it sees and may call', async () => {
    const narrow = await client(await token({ scope: 'mcp:echo' }));
    try {
      assert.deepEqual((await narrow.listTools()).tools.map((tool) => tool.name), ['everything__echo']);
      const result = await narrow.callTool({ name: 'everything__echo', arguments: { message: 'jwt' } });
      assert.equal((result.content as Array<{ text: string }>)[0]?.text, 'Echo: jwt');
      await assert.rejects(narrow.callTool({ name: 'everything__get-sum', arguments: { a: 1, b: 2 } }), /Unknown tool/);
    } finally {
      await narrow.close();
    }
    const wide = await client(await token({ scp: ['mcp:all'] }));
    try {
      assert.ok((await wide.listTools()).tools.length > 3);
    } finally {
      await wide.close();
    }
    const none = await client(await token({ scope: 'unrelated' }));
    try {
      assert.deepEqual((await none.listTools()).tools, [], 'no grant: no tools');
    } finally {
      await none.close();
    }
    assert.ok(!everything.authorizations.some((value) => value !== undefined), 'the client token never went upstream');
  });

  test('expired, wrong-audience, wrong-issuer and foreign-signed tokens are 401', async () => {
    assert.equal(await initializeStatus(await token({ scope: 'mcp:echo' }, { expiresIn: Math.floor(Date.now() / 1000) - 120 })), 401);
    assert.equal(await initializeStatus(await token({ scope: 'mcp:echo' }, { audience: 'someone-else' })), 401);
    assert.equal(await initializeStatus(await token({ scope: 'mcp:echo' }, { issuer: 'https://evil.example.test' })), 401);
    assert.equal(await initializeStatus(await token({ scope: 'mcp:echo' }, { key: otherKey })), 401);
    assert.equal(await initializeStatus('a.b.c'), 401);
  });
});
