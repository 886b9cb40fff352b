// The CRDs are generated from the zod schemas: the checked-in files must match the
// generator, and every schema must be structural (what the API server requires).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buildCrd, renderCrdFiles, specSchemaOf } from '../../operator/crds/crd-manifests.ts';
import { driftedCrdFiles } from '../../operator/crds/generate-crds.ts';
import { toStructuralSchema } from '../../operator/crds/structural-schema.ts';
import { RESOURCE_KINDS, ROUTING_CREDENTIAL_KEYS } from '../../operator/reconcile/resource-schemas.ts';

type Node = { [key: string]: unknown };

/** Every problem that makes a schema non-structural, with its path. */
function structuralProblems(node: Node, path: string): string[] {
  const problems: string[] = [];
  for (const banned of ['$ref', 'anyOf', 'oneOf', 'allOf', 'not', 'default', '$defs', 'const']) {
    if (banned in node) problems.push(`${path}: has ${banned}`);
  }
  const open = node['x-kubernetes-preserve-unknown-fields'] === true || node['x-kubernetes-int-or-string'] === true;
  if (typeof node['type'] !== 'string' && !open) problems.push(`${path}: no type`);
  if (node['properties'] !== undefined && node['additionalProperties'] !== undefined) {
    problems.push(`${path}: both properties and additionalProperties`);
  }
  for (const [name, child] of Object.entries((node['properties'] as Record<string, Node> | undefined) ?? {})) {
    problems.push(...structuralProblems(child, `${path}.${name}`));
  }
  if (typeof node['items'] === 'object') problems.push(...structuralProblems(node['items'] as Node, `${path}[]`));
  if (typeof node['additionalProperties'] === 'object') {
    problems.push(...structuralProblems(node['additionalProperties'] as Node, `${path}.*`));
  }
  return problems;
}

function propertyNames(node: Node): string[] {
  const names: string[] = [];
  for (const [name, child] of Object.entries((node['properties'] as Record<string, Node> | undefined) ?? {})) {
    names.push(name, ...propertyNames(child));
  }
  if (typeof node['items'] === 'object') names.push(...propertyNames(node['items'] as Node));
  return names;
}

describe('generated CRDs', () => {
  test('crds/ and the chart match the generator output (run `npm run crds` after changing a schema)', () => {
    assert.deepEqual(driftedCrdFiles(), []);
  });

  test('ten namespaced kinds in aigateway.dev/v1alpha1 with their short names, status subresource and printer columns', () => {
    const files = renderCrdFiles();
    assert.equal(files.length, 10);
    const shortNames = Object.values(RESOURCE_KINDS).map((kind) => {
      const crd = buildCrd(kind) as { spec: { scope: string; group: string; names: { shortNames: string[] }; versions: Node[] } };
      assert.equal(crd.spec.scope, 'Namespaced');
      assert.equal(crd.spec.group, 'aigateway.dev');
      const version = crd.spec.versions[0] as Node;
      assert.equal(version['name'], 'v1alpha1');
      assert.deepEqual(version['subresources'], { status: {} });
      const columns = (version['additionalPrinterColumns'] as Node[]).filter((column) => column['priority'] === undefined).map((column) => column['name']);
      const expected: Record<string, string[]> = {
        GatewayConfig: ['Mode', 'Targets', 'Programmed', 'Age'],
        Provider: ['Provider', 'Host', 'Ready', 'Reason', 'Age'],
        RateLimitPolicy: ['Type', 'Unit', 'Value', 'Status', 'Ready', 'Reason', 'Age'],
        UsageLimitPolicy: ['Type', 'Limit', 'Spent', 'Remaining', 'Ready', 'Reason', 'Age'],
      };
      assert.deepEqual(columns, expected[kind.kind] ?? ['Ready', 'Reason', 'Age'], kind.kind);
      return crd.spec.names.shortNames[0];
    });
    assert.deepEqual(shortNames, ['aigwc', 'aigwp', 'aigwrl', 'aigwpr', 'aigwg', 'aigwk', 'aigwm', 'aigwmcp', 'aigwul', 'aigwmp']);
  });

  test('every schema is structural', () => {
    for (const kind of Object.values(RESOURCE_KINDS)) {
      const crd = buildCrd(kind) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Node } }> } };
      const schema = crd.spec.versions[0]?.schema.openAPIV3Schema;
      assert.ok(schema !== undefined);
      assert.deepEqual(structuralProblems(schema, kind.kind), []);
    }
  });

  test('types, enums, ranges and required fields come from the zod schemas', () => {
    const policy = specSchemaOf(RESOURCE_KINDS.RateLimitPolicy) as Node;
    const properties = policy['properties'] as Record<string, Node>;
    assert.deepEqual(properties['unit']?.['enum'], ['rpm', 'rph', 'rpd']);
    assert.equal(properties['value']?.['exclusiveMinimum'], true);
    assert.deepEqual(policy['required'], ['type', 'unit', 'value', 'conditions', 'group_by']);
    const config = specSchemaOf(RESOURCE_KINDS.GatewayConfig) as Node;
    const retry = (config['properties'] as Record<string, Node>)['retry'] as Node;
    const attempts = (retry['properties'] as Record<string, Node>)['attempts'];
    assert.deepEqual({ type: attempts?.['type'], minimum: attempts?.['minimum'], maximum: attempts?.['maximum'] }, { type: 'integer', minimum: 0, maximum: 5 });
    // override_params is open; nested targets are typed to a bound, then kept as-is.
    const overrideParams = (config['properties'] as Record<string, Node>)['override_params'];
    assert.equal(overrideParams?.['x-kubernetes-preserve-unknown-fields'], true);
    assert.match(JSON.stringify(config), /Nested deeper than this CRD schema describes/);
  });

  test('credentials are never fields of a CR: only Secret references', () => {
    const config = specSchemaOf(RESOURCE_KINDS.GatewayConfig) as Node;
    const names = new Set(propertyNames(config));
    for (const key of ROUTING_CREDENTIAL_KEYS) assert.ok(!names.has(key), `GatewayConfig has ${key}`);
    const provider = (specSchemaOf(RESOURCE_KINDS.Provider) as Node)['properties'] as Record<string, Node>;
    assert.ok(!('apiKey' in provider));
    assert.deepEqual((provider['apiKeySecretRef'] as Node)['required'], ['name', 'key']);
    const apiKey = (specSchemaOf(RESOURCE_KINDS.GatewayAPIKey) as Node)['properties'] as Record<string, Node>;
    assert.ok(!('key' in apiKey));
    assert.ok('keySecretRef' in apiKey && 'keyHash' in apiKey);
  });

  test('recursion is bounded and unions collapse into one structural node', () => {
    const recursive = {
      type: 'object',
      properties: {
        children: { type: 'array', items: { $ref: '#' } },
        either: { anyOf: [{ type: 'string' }, { type: 'integer' }] },
        mixed: { anyOf: [{ type: 'string' }, { type: 'object', properties: {} }] },
        maybe: { anyOf: [{ type: 'string', enum: ['a'] }, { type: 'string', enum: ['b'] }, { type: 'null' }] },
      },
      additionalProperties: false,
    };
    const out = toStructuralSchema(recursive, { maxRecursionDepth: 1 }) as Node;
    const properties = out['properties'] as Record<string, Node>;
    const child = (properties['children']?.['items'] as Node)['properties'] as Record<string, Node>;
    assert.equal((child['children']?.['items'] as Node)['x-kubernetes-preserve-unknown-fields'], true);
    assert.equal(properties['either']?.['x-kubernetes-int-or-string'], true);
    assert.equal(properties['mixed']?.['x-kubernetes-preserve-unknown-fields'], true);
    assert.deepEqual(properties['maybe'], { type: 'string', enum: ['a', 'b'], nullable: true });
    assert.equal(out['additionalProperties'], undefined);
  });

  test('every field of every CRD has a description (kubectl explain), conditions are a map keyed by type', () => {
    for (const kind of Object.values(RESOURCE_KINDS)) {
      const crd = buildCrd(kind) as { spec: { versions: Array<{ schema: { openAPIV3Schema: Node } }> } };
      const root = crd.spec.versions[0]?.schema.openAPIV3Schema as Node;
      const undescribed: string[] = [];
      let fields = 0;
      const walk = (node: Node, path: string): void => {
        for (const [name, child] of Object.entries((node['properties'] as Record<string, Node> | undefined) ?? {})) {
          if (path === kind.kind && name === 'metadata') continue; // the API server's own (no description allowed)
          fields += 1;
          if (typeof child['description'] !== 'string' || child['description'] === '') undescribed.push(`${path}.${name}`);
          walk(child, `${path}.${name}`);
        }
        if (typeof node['items'] === 'object') walk(node['items'] as Node, `${path}[]`);
        if (typeof node['additionalProperties'] === 'object') walk(node['additionalProperties'] as Node, `${path}.*`);
      };
      walk(root, kind.kind);
      assert.ok(fields > 8, `${kind.kind}: ${fields} fields`);
      assert.deepEqual(undescribed, [], `${kind.kind}: fields without a description`);
      const conditions = ((root['properties'] as Record<string, Node>)['status']?.['properties'] as Record<string, Node>)['conditions'] as Node;
      assert.equal(conditions['x-kubernetes-list-type'], 'map');
      assert.deepEqual(conditions['x-kubernetes-list-map-keys'], ['type']);
      assert.ok(((conditions['items'] as Node)['required'] as string[]).includes('type'));
    }
  });
});
