// The adapters' forward operation: forwarded routes (files, batches, fine-tuning…) in each
// provider's own form, and the families whose APIs have none of them declaring so.
import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { describe, test } from 'node:test';
import type { RoutingConfig } from '../../../proxy/config/routing-config-schema.ts';
import { catalogEntry } from '../../../proxy/providers/provider-catalog.ts';
import type { ForwardedCall, ResolvedTarget } from '../../../proxy/providers/provider-adapter.ts';

const JWT = 'eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOiJjb2duaXRpdmVzZXJ2aWNlcyJ9.c2ln';

function target(provider: string, node: RoutingConfig, baseUrl?: string, savedOptions?: Record<string, unknown>): ResolvedTarget {
  const entry = catalogEntry(provider);
  assert.ok(entry !== undefined);
  const saved = savedOptions === undefined ? undefined : ({ slug: 's', provider, options: savedOptions } as never);
  const family = entry.resolveOptions?.({ node, saved, headers: {} });
  return {
    path: 'config',
    provider,
    adapter: entry.adapter,
    baseUrl: baseUrl ?? family?.baseUrl ?? entry.baseUrl ?? '',
    customHost: baseUrl !== undefined,
    hostChosenBy: 'request',
    apiKey: node.api_key,
    headers: provider === 'openai' ? { 'openai-organization': 'org-1' } : {},
    options: family?.options ?? {},
    node,
  };
}

function forward(resolved: ResolvedTarget, call: ForwardedCall) {
  const operation = resolved.adapter.forward;
  assert.ok(operation !== undefined, `${resolved.provider} forwards`);
  return operation(resolved, call);
}

describe('OpenAI-compatible forward', () => {
  test('base URL + path + query, the bearer key, the provider headers, the client headers and the body as given', () => {
    const body = Readable.from([Buffer.from('--boundary')]);
    const planned = forward(target('openai', { provider: 'openai', api_key: 'sk-1' }), {
      method: 'POST',
      path: 'files',
      query: new URLSearchParams({ purpose: 'batch' }),
      body,
      headers: { 'content-type': 'multipart/form-data; boundary=b', 'content-length': '10' },
    });
    assert.equal(planned.url.href, 'https://api.openai.com/v1/files?purpose=batch');
    assert.equal(planned.method, 'POST');
    assert.deepEqual(planned.headers, {
      'openai-organization': 'org-1',
      'content-type': 'multipart/form-data; boundary=b',
      'content-length': '10',
      authorization: 'Bearer sk-1',
    });
    assert.equal(planned.body, body);
  });

  test('a client header cannot replace the credential; no key, no authorization', () => {
    const withKey = forward(target('groq', { provider: 'groq', api_key: 'gsk' }), { method: 'GET', path: 'models', headers: { authorization: 'Bearer other' } });
    assert.equal(withKey.headers['authorization'], 'Bearer gsk');
    const keyless = forward(target('ollama', { provider: 'ollama' }, 'http://ollama:11434/v1'), { method: 'DELETE', path: 'files/file-1' });
    assert.equal(keyless.url.href, 'http://ollama:11434/v1/files/file-1');
    assert.equal(keyless.headers['authorization'], undefined);
    assert.equal(keyless.body, null);
  });
});

describe('Azure OpenAI forward', () => {
  const azure = (node: Partial<RoutingConfig>, baseUrl?: string, saved?: Record<string, unknown>) =>
    target('azure-openai', { provider: 'azure-openai', resource_name: 'contoso', ...node }, baseUrl, saved);

  test('with an api version: /openai/{path}?…&api-version= and the api-key header', () => {
    const planned = forward(azure({ api_key: 'k-1', api_version: '2024-10-21' }), {
      method: 'GET',
      path: 'files/file-1/content',
      query: new URLSearchParams({ after: 'x' }),
    });
    assert.equal(planned.url.href, 'https://contoso.openai.azure.com/openai/files/file-1/content?after=x&api-version=2024-10-21');
    assert.equal(planned.headers['api-key'], 'k-1');
    assert.equal(planned.headers['authorization'], undefined);
  });

  test('without one: the v1 API; an Entra token (JWT) goes as bearer; a custom host ending in /openai is tolerated', () => {
    const planned = forward(azure({ api_key: JWT }, 'http://mock:9000/openai'), { method: 'POST', path: 'batches', body: Buffer.from('{}') });
    assert.equal(planned.url.href, 'http://mock:9000/openai/v1/batches');
    assert.equal(planned.headers['authorization'], `Bearer ${JWT}`);
    assert.equal(planned.headers['api-key'], undefined);
  });

  test('authMode entra sends even a non-JWT credential as bearer; api-key mode sends a JWT as api-key', () => {
    assert.equal(forward(azure({ api_key: 'opaque' }, undefined, { authMode: 'entra' }), { method: 'GET', path: 'batches' }).headers['authorization'], 'Bearer opaque');
    assert.equal(forward(azure({ api_key: JWT }, undefined, { authMode: 'api-key' }), { method: 'GET', path: 'batches' }).headers['api-key'], JWT);
  });
});

describe('families without forwarded routes', () => {
  test('anthropic forwards its model list only', () => {
    const forward = catalogEntry('anthropic')?.adapter.forward;
    assert.ok(forward);
    const target = { baseUrl: 'https://api.anthropic.com/v1', apiKey: 'sk-ant-test', options: {}, provider: 'anthropic' } as never;
    const planned = forward(target, { method: 'GET', path: 'models', query: new URLSearchParams({ limit: '1000' }) });
    assert.equal(String(planned.url), 'https://api.anthropic.com/v1/models?limit=1000');
    assert.equal(planned.headers['x-api-key'], 'sk-ant-test');
    assert.equal(planned.headers['anthropic-version'], '2023-06-01');
    assert.throws(() => forward(target, { method: 'GET', path: 'files' }), { code: 'AIGW_ERR_UNSUPPORTED_ENDPOINT' });
    assert.throws(() => forward(target, { method: 'POST', path: 'models' }), { code: 'AIGW_ERR_UNSUPPORTED_ENDPOINT' });
  });
  for (const provider of ['vertex-ai', 'bedrock']) {
    test(`${provider} declares it forwards nothing`, () => {
      assert.equal(catalogEntry(provider)?.adapter.forward, undefined);
    });
  }
});
