import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isProviderName, PROVIDER_NAMES, SELF_HOSTED_PROVIDERS } from '../../../proxy/config/provider-names.ts';
import { catalogEntry, catalogNames } from '../../../proxy/providers/provider-catalog.ts';
import { providerEntryProblems } from '../../../proxy/config/state-validation.ts';
import { compileEgressPolicy } from '../../../proxy/upstream/egress-policy.ts';

// The state floor names the providers without importing the catalog; these hold the two equal.
describe('provider names (config/provider-names.ts) and the catalog', () => {
  test('the catalog serves exactly the names a state may use, in the same order', () => {
    assert.deepEqual(catalogNames(), [...PROVIDER_NAMES]);
  });

  test('self-hosted: exactly the catalog entries with no base URL and nothing to build one from', () => {
    const selfHosted = catalogNames().filter((name) => {
      const entry = catalogEntry(name);
      return entry !== undefined && entry.baseUrl === undefined && entry.resolveOptions === undefined;
    });
    assert.deepEqual(selfHosted, [...SELF_HOSTED_PROVIDERS]);
  });

  test('loading names problems from the vocabulary: unknown with a hint, self-hosted without a host', () => {
    const egress = compileEgressPolicy([]);
    assert.equal(isProviderName('anthropic'), true);
    assert.equal(isProviderName('anthropics'), false);
    assert.deepEqual(providerEntryProblems({ provider: 'openai' }, 'providers.a', egress), []);
    const [unknown] = providerEntryProblems({ provider: 'antropic' }, 'providers.a', egress);
    assert.match(unknown?.message ?? '', /unknown provider "antropic" \(did you mean "anthropic"\?\)/);
    const [hostless] = providerEntryProblems({ provider: 'vllm' }, 'providers.a', egress);
    assert.equal(hostless?.message, 'provider "vllm" is self-hosted: set customHost');
  });
});
