// The MCPServer kind: rendered into the state's mcpServers, header credentials from Secrets
// labelled aigateway.dev/credential=mcp-server into the credentials document (never the
// ConfigMap), stdio refused in a cluster, and the result (prices included) loads in the proxy.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderGatewayState } from '../../operator/reconcile/render-gateway-state.ts';
import { emptyResources, type SecretResource } from '../../operator/reconcile/resource-types.ts';
import { CREDENTIAL_LABEL } from '../../operator/reconcile/secret-access.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { mcpCatalog } from '../../proxy/mcp/mcp-catalog.ts';

const encode = (value: string): string => Buffer.from(value).toString('base64');

function secret(name: string, purpose: string | undefined, value: string): SecretResource {
  return { metadata: { name, ...(purpose === undefined ? {} : { labels: { [CREDENTIAL_LABEL]: purpose } }) }, data: { token: encode(value) } };
}

function server(name: string, spec: Record<string, unknown>) {
  return { metadata: { name, uid: `uid-${name}`, generation: 1, creationTimestamp: '2026-01-01T00:00:00Z' }, spec };
}

function ready(result: ReturnType<typeof renderGatewayState>, name: string): { status: string; reason: string; message: string } {
  const status = result.statuses.find((candidate) => candidate.kind === 'MCPServer' && candidate.name === name);
  const condition = status?.conditions.find((candidate) => candidate.type === 'Ready');
  assert.ok(condition !== undefined, `a Ready condition for ${name}`);
  return condition as { status: string; reason: string; message: string };
}

describe('MCPServer resources', () => {
  test('render into mcpServers with Secret headers kept in the credentials, and load in the proxy', () => {
    const resources = emptyResources();
    resources.MCPServer.push(
      server('github', {
        url: 'https://mcp.github.example/mcp',
        headersFrom: [{ name: 'Authorization', prefix: 'Bearer ', secretRef: { name: 'github-mcp', key: 'token' } }],
        tools: { include: ['create_issue'] },
        access: [{ workspaces: ['team-a'] }],
        price: { perCall: 0.001, tools: { create_issue: 0.02 } },
      }),
      server('local', { transport: 'stdio', url: 'https://x.example/mcp' }),
      server('Bad.Name', { url: 'https://x.example/mcp' }),
      server('stolen', { url: 'https://evil.example/mcp', headersFrom: [{ name: 'Authorization', secretRef: { name: 'provider-key', key: 'token' } }] }),
    );
    const result = renderGatewayState({
      resources,
      secrets: [secret('github-mcp', 'mcp-server', 'ghp_secret_value'), secret('provider-key', 'provider', 'sk-provider')],
    });
    assert.equal(ready(result, 'github').status, 'True');
    assert.equal(ready(result, 'local').reason, 'StdioNotSupported');
    assert.equal(ready(result, 'Bad.Name').reason, 'InvalidName');
    assert.equal(ready(result, 'stolen').reason, 'SecretNotPermitted', 'a provider Secret is not readable for an MCPServer');
    assert.deepEqual(result.state.mcpServers?.map((entry) => entry.name), ['github']);
    assert.deepEqual(result.credentials.mcpServers, { github: { headers: { Authorization: 'Bearer ghp_secret_value' } } });

    const texts = serializeRenderedState(result);
    assert.doesNotMatch(texts.stateYaml, /ghp_secret_value/, 'the ConfigMap never holds the credential');
    const loaded = loadStateFromTexts({ state: texts.stateYaml, credentials: texts.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('; '));
    const github = mcpCatalog(loaded.state).servers.get('github');
    assert.equal(github?.headers['Authorization'], 'Bearer ghp_secret_value');
    assert.equal(github?.exposedTool('create_issue'), 'create_issue');
    assert.equal(github?.exposedTool('delete_repo'), undefined);
    assert.equal(github?.priceOf('create_issue'), 0.02, 'spec.price reaches the proxy');
    assert.equal(github?.priceOf('search'), 0.001);
  });

  test('a namespace without MCPServers renders no mcpServers key', () => {
    const result = renderGatewayState({ resources: emptyResources(), secrets: [] });
    assert.equal('mcpServers' in result.state, false);
  });
});
