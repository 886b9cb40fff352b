import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadStateFromTexts } from '../../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../../proxy/guardrails/builtin-guardrail-compiler.ts';
import type { GatewayState } from '../../../proxy/config/gateway-state.ts';
import { GatewayError } from '../../../proxy/errors.ts';
import { resolveTarget } from '../../../proxy/routing/resolve-target.ts';
import { selectRoute } from '../../../proxy/routing/select-route.ts';

const STATE_TEXT = `
providers:
  - { slug: prod, provider: openai, virtualKey: vk-prod, apiKey: sk-prod, organization: org-1 }
  - { slug: local, provider: ollama, customHost: "http://127.0.0.1:11434/v1/" }
egress: { allow: ["127.0.0.1"] }
configs:
  - { id: saved, config: { provider: "@prod" } }
`;

function state(): GatewayState {
  const loaded = loadStateFromTexts({ state: STATE_TEXT }, {}, BUILTIN_GUARDRAIL_COMPILER);
  assert.ok(loaded.ok);
  return loaded.state;
}

function targetFor(headers: Record<string, string>) {
  const s = state();
  return resolveTarget(selectRoute(headers, s).plan.settings, 'config', s, headers);
}

function gatewayError(code: string) {
  return (error: unknown) => error instanceof GatewayError && error.code === code;
}

describe('selectRoute + resolveTarget', () => {
  test('provider name + Authorization → the catalog host with the bearer token', () => {
    const target = targetFor({ 'x-gateway-provider': 'openai', authorization: 'Bearer sk-client' });
    assert.equal(target.baseUrl, 'https://api.openai.com/v1');
    assert.equal(target.apiKey, 'sk-client');
    assert.equal(target.provider, 'openai');
  });

  test('OpenAI-compatible hosts are data', () => {
    assert.equal(targetFor({ 'x-gateway-provider': 'groq', authorization: 'Bearer k' }).baseUrl, 'https://api.groq.com/openai/v1');
    assert.equal(targetFor({ 'x-gateway-provider': 'together-ai', authorization: 'Bearer k' }).baseUrl, 'https://api.together.xyz/v1');
  });

  test('@slug and virtual key use saved credentials and options', () => {
    const forms: Array<Record<string, string>> = [{ 'x-gateway-provider': '@prod' }, { 'x-gateway-virtual-key': 'vk-prod' }, { 'x-gateway-config': 'saved' }];
    for (const headers of forms) {
      const target = targetFor(headers);
      assert.equal(target.apiKey, 'sk-prod');
      assert.equal(target.headers['openai-organization'], 'org-1');
    }
  });

  test('a self-hosted saved provider keeps its custom host, trailing slash trimmed', () => {
    const target = targetFor({ 'x-gateway-provider': '@local' });
    assert.equal(target.baseUrl, 'http://127.0.0.1:11434/v1');
    assert.equal(target.apiKey, undefined);
  });

  test('config header wins over provider headers', () => {
    const target = targetFor({
      'x-gateway-config': JSON.stringify({ provider: 'openai', api_key: 'sk-config' }),
      'x-gateway-provider': 'groq',
      authorization: 'Bearer sk-header',
    });
    assert.equal(target.apiKey, 'sk-config');
    assert.equal(target.provider, 'openai');
  });

  test('errors name what is missing', () => {
    assert.throws(() => targetFor({}), gatewayError('AIGW_ERR_MISSING_PROVIDER'));
    assert.throws(() => targetFor({ 'x-gateway-custom-host': 'http://127.0.0.1/v1' }), gatewayError('AIGW_ERR_MISSING_PROVIDER'));
    assert.throws(() => targetFor({ 'x-gateway-provider': 'openai' }), gatewayError('AIGW_ERR_MISSING_PROVIDER_KEY'));
    assert.throws(() => targetFor({ 'x-gateway-provider': 'ollama' }), gatewayError('AIGW_ERR_MISSING_PROVIDER'));
    assert.throws(() => targetFor({ 'x-gateway-provider': 'not-a-provider', authorization: 'Bearer k' }), gatewayError('AIGW_ERR_UNSUPPORTED_PROVIDER'));
    assert.throws(
      () => targetFor({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': 'ftp://host/v1', authorization: 'Bearer k' }),
      gatewayError('AIGW_ERR_INVALID_HEADER'),
    );
    assert.throws(
      () => targetFor({ 'x-gateway-provider': 'openai', 'x-gateway-custom-host': 'not a url', authorization: 'Bearer k' }),
      gatewayError('AIGW_ERR_INVALID_HEADER'),
    );
    assert.throws(
      () => targetFor({ 'x-gateway-provider': 'x', 'x-gateway-custom-host': 'http://u:p@host/v1' }),
      gatewayError('AIGW_ERR_INVALID_HEADER'),
    );
  });
});
