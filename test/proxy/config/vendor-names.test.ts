// Real vendor names stand for the spec's anonymised tokens, in config keys (azure_*, vertex_*,
// aws_*, openai_*) and headers (x-gateway-azure-resource-name, …); the tokens stay accepted.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { specSchemaOf } from '../../../operator/crds/crd-manifests.ts';
import { RESOURCE_KINDS } from '../../../operator/reconcile/resource-schemas.ts';
import { loadStateFromTexts } from '../../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { parseRoutingConfig } from '../../../proxy/config/routing-config-validation.ts';
import { normaliseVendorHeaders, withSpecConfigKeys } from '../../../proxy/config/vendor-names.ts';
import { resolveTarget } from '../../../proxy/routing/resolve-target.ts';
import { selectRoute } from '../../../proxy/routing/select-route.ts';

describe('real vendor names in routing configs', () => {
  test('azure_*, vertex_*, aws_* and openai_* keys validate as the spec keys, in targets too', () => {
    const parsed = parseRoutingConfig({
      strategy: { mode: 'fallback' },
      targets: [
        { provider: 'azure-openai', api_key: 'k', azure_resource_name: 'contoso', azure_deployment_id: 'gpt4o', azure_api_version: '2024-10-21' },
        { provider: 'bedrock', aws_access_key_id: 'AKIA', aws_secret_access_key: 's', aws_region: 'eu-west-1' },
        { provider: 'vertex-ai', api_key: 'k', vertex_project_id: 'p', vertex_region: 'europe-west4' },
        { provider: 'openai', api_key: 'k', openai_organization: 'org-1' },
      ],
    });
    assert.ok(parsed.success, parsed.success ? '' : parsed.issues.join('; '));
    const [azure, bedrock, vertex, openai] = parsed.config.targets ?? [];
    assert.equal(azure?.cloudA_resource_name, 'contoso');
    assert.equal(bedrock?.cloudC_region, 'eu-west-1');
    assert.equal(vertex?.cloudB_project_id, 'p');
    assert.equal(openai?.vendorA_organization, 'org-1');
  });

  test("the spec's tokens still work, and a key sent under both names is refused", () => {
    assert.ok(parseRoutingConfig({ provider: 'bedrock', cloudC_access_key_id: 'a', cloudC_secret_access_key: 's' }).success);
    const both = parseRoutingConfig({ provider: 'bedrock', cloudC_access_key_id: 'a', cloudC_secret_access_key: 's', aws_region: 'us-east-1', cloudC_region: 'eu-west-1' });
    assert.equal(both.success, false);
    assert.deepEqual(both.success ? [] : both.issues, ['aws_region: names the same setting as cloudC_region: send one of them']);
  });

  test('the GatewayConfig CRD carries the real names; credential keys stay out of it under either name', () => {
    const spec = JSON.stringify(specSchemaOf(RESOURCE_KINDS.GatewayConfig));
    for (const key of ['azure_resource_name', 'azure_region', 'vertex_region', 'aws_region', 'openai_organization', 'cloudA_region']) assert.ok(spec.includes(`"${key}"`), key);
    for (const key of ['aws_secret_access_key', 'aws_access_key_id', 'vertex_service_account_json', 'cloudC_secret_access_key']) assert.ok(!spec.includes(`"${key}"`), key);
  });

  test('keys that are no alias (prototype names included) are left alone', () => {
    const input = { provider: 'openai', constructor: 1, toString: 2 };
    assert.equal(withSpecConfigKeys(input), input);
  });
});

describe('real vendor names in headers', () => {
  test('x-gateway-azure-resource-name and friends reach the Azure target', () => {
    const loaded = loadStateFromTexts({ state: 'apiKeys: []' }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok);
    const headers: Record<string, string> = {
      'x-gateway-provider': 'azure-openai',
      authorization: 'Bearer sk-azure',
      'x-gateway-azure-resource-name': 'contoso',
      'x-gateway-azure-deployment-id': 'gpt4o',
      'x-gateway-azure-api-version': '2024-10-21',
    };
    normaliseVendorHeaders(headers);
    const target = resolveTarget(selectRoute(headers, loaded.state).plan.settings, 'config', loaded.state, headers);
    assert.match(target.baseUrl, /^https:\/\/contoso\.openai\.azure\.com/);
  });

  test("the spec's header wins when both are sent", () => {
    const headers: Record<string, string> = { 'x-gateway-aws-region': 'eu-west-1', 'x-gateway-cloudc-region': 'us-east-1' };
    normaliseVendorHeaders(headers);
    assert.equal(headers['x-gateway-cloudc-region'], 'us-east-1');
  });
});
