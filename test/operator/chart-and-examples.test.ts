// The chart's dashboard names only metrics the code exports, and the examples/ render to
// Ready resources with a state the proxy loads (no cluster needed).
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadAll } from 'js-yaml';
import { createOperatorMetrics } from '../../operator/k8s/operator-metrics.ts';
import { renderGatewayState } from '../../operator/reconcile/render-gateway-state.ts';
import { KIND_NAMES, type KindName } from '../../operator/reconcile/resource-schemas.ts';
import { emptyResources, type CustomResource, type SecretResource } from '../../operator/reconcile/resource-types.ts';
import { CREDENTIAL_LABEL } from '../../operator/reconcile/secret-access.ts';
import { serializeRenderedState } from '../../operator/reconcile/serialize-state.ts';
import { loadStateFromTexts } from '../../proxy/config/state-loader.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { createGatewayMetrics } from '../../proxy/observability/gateway-metrics.ts';

const ROOT = join(import.meta.dirname, '..', '..');

/** The opt-in label the install guide puts on a Secret it creates; the examples that create it say the same. */
function documentedLabel(name: string): string {
  const pattern = new RegExp(`label secret ${name} ${CREDENTIAL_LABEL.replace('.', '\\.')}=([a-z-]+)`);
  const guide = pattern.exec(readFileSync(join(ROOT, 'docs', 'kubernetes.md'), 'utf8'));
  assert.ok(guide?.[1] !== undefined, `docs/kubernetes.md labels the Secret ${name} (${CREDENTIAL_LABEL})`);
  const examples = join(ROOT, 'examples');
  for (const file of readdirSync(examples)) {
    const text = readFileSync(join(examples, file), 'utf8');
    if (text.includes(`create secret generic ${name}`)) assert.equal(pattern.exec(text)?.[1], guide[1], `${file}: labels the Secret ${name} as the install guide does`);
  }
  return guide[1];
}

async function exportedMetricNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const registry of [createGatewayMetrics({ defaultMetrics: false }).registry, createOperatorMetrics({ defaultMetrics: false }).registry]) {
    for (const metric of await registry.getMetricsAsJSON()) names.add(metric.name);
  }
  return names;
}

describe('Helm chart dashboard', () => {
  test('every metric the dashboard queries is exported by the proxy or the operator', async () => {
    const dashboard = readFileSync(join(ROOT, 'charts', 'aigateway', 'dashboards', 'aigateway.json'), 'utf8');
    const parsed = JSON.parse(dashboard) as { panels: Array<{ targets: Array<{ expr: string }> }> };
    const queried = new Set<string>();
    for (const panel of parsed.panels) {
      for (const target of panel.targets) {
        // Label lists (`by (gen_ai_system, …)`) name labels, not metrics.
        const expr = target.expr.replace(/\b(by|without)\s*\([^)]*\)/g, '');
        for (const match of expr.matchAll(/\b(aigateway_[a-z0-9_]+|gen_ai_[a-z0-9_]+)\b/g)) {
          queried.add((match[1] ?? '').replace(/_(bucket|sum|count)$/, ''));
        }
      }
    }
    assert.ok(queried.size >= 5);
    const exported = await exportedMetricNames();
    assert.deepEqual([...queried].filter((name) => !exported.has(name)), []);
  });

  test('every panel is scoped by the namespace and instance variables (several installs are not summed)', () => {
    const parsed = JSON.parse(readFileSync(join(ROOT, 'charts', 'aigateway', 'dashboards', 'aigateway.json'), 'utf8')) as {
      templating: { list: Array<{ name: string; query?: { query: string } | string }> };
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    assert.deepEqual(parsed.templating.list.map((variable) => variable.name), ['datasource', 'namespace', 'instance']);
    const unscoped: string[] = [];
    for (const panel of parsed.panels) {
      for (const target of panel.targets) {
        const expr = target.expr.replace(/\b(by|without)\s*\([^)]*\)/g, '');
        for (const match of expr.matchAll(/\b((?:aigateway|gen_ai)_[a-z0-9_]+)(\{[^}]*\})?/g)) {
          const selector = match[2] ?? '';
          if (!selector.includes('namespace=~"$namespace"') || !selector.includes('instance=~"$instance"')) unscoped.push(`${panel.title}: ${match[0]}`);
        }
      }
    }
    assert.deepEqual(unscoped, []);
  });

  test('process metrics carry one prefix (aigateway_process_*, not aigateway_process_process_*)', async () => {
    const names = (await createGatewayMetrics().registry.getMetricsAsJSON()).map((metric) => metric.name);
    assert.ok(names.includes('aigateway_process_cpu_user_seconds_total'), names.filter((name) => name.includes('cpu')).join(', '));
    assert.deepEqual(names.filter((name) => /process_process|nodejs_nodejs/.test(name)), []);
  });
});

describe('examples/', () => {
  test('every example is a valid resource that renders Ready once the Secrets the docs create exist, and the state loads in the proxy', () => {
    const resources = emptyResources();
    // What the documented `kubectl create secret` and `kubectl label secret` steps make, with random values.
    const encode = (value: string) => Buffer.from(value).toString('base64');
    const labelled = (name: string) => ({ [CREDENTIAL_LABEL]: documentedLabel(name) });
    const secrets: SecretResource[] = [
      { metadata: { name: 'openai-credentials', labels: labelled('openai-credentials') }, data: { apiKey: encode(`sk-${randomBytes(24).toString('hex')}`) } },
      { metadata: { name: 'gateway-keys', labels: labelled('gateway-keys') }, data: { 'platform-admin': encode(`gw-${randomBytes(24).toString('hex')}`) } },
    ];
    const directory = join(ROOT, 'examples');
    for (const file of readdirSync(directory).filter((name) => name.endsWith('.yaml'))) {
      for (const document of loadAll(readFileSync(join(directory, file), 'utf8')) as Array<Record<string, unknown> | null>) {
        if (document === null) continue;
        const metadata = document['metadata'] as { name: string };
        // `kubectl apply -f examples/` after the Secret steps must not overwrite the user's Secrets.
        assert.notEqual(document['kind'], 'Secret', `${file}: examples never carry Secrets`);
        assert.equal(document['apiVersion'], 'aigateway.dev/v1alpha1', file);
        assert.ok(KIND_NAMES.includes(document['kind'] as KindName), `${file}: ${String(document['kind'])}`);
        resources[document['kind'] as KindName].push({ metadata: { ...metadata, generation: 1 }, spec: document['spec'] } satisfies CustomResource);
      }
    }
    for (const kind of KIND_NAMES) assert.ok(resources[kind].length > 0, `no ${kind} example`);
    const result = renderGatewayState({ resources, secrets });
    for (const status of result.statuses) {
      const ready = status.conditions.find((condition) => condition.type === 'Ready');
      assert.equal(ready?.status, 'True', `${status.kind}/${status.name}: ${ready?.message}`);
    }
    for (const file of readdirSync(directory)) {
      assert.doesNotMatch(readFileSync(join(directory, file), 'utf8'), /^\s*(stringData|data):/m, `${file}: no Secret data`);
    }
    const texts = serializeRenderedState(result);
    const loaded = loadStateFromTexts({ state: texts.stateYaml, credentials: texts.credentialsYaml }, {}, BUILTIN_GUARDRAIL_COMPILER);
    assert.ok(loaded.ok, loaded.ok ? '' : loaded.errors.join('; '));
  });
});
