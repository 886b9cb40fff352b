// JSON Schema (zod's `z.toJSONSchema`, OpenAPI 3.0 flavour) → a Kubernetes *structural*
// schema (apiextensions.k8s.io/v1): every node has a type, no $ref (recursion is bounded),
// unions collapsed, no defaults (the API server would apply them; the proxy's schemas own
// defaults), and `x-kubernetes-preserve-unknown-fields` only where the zod schema is open
// (records of unknown values, loose objects, mixed-type unions) or the recursion ends.

export type JsonSchema = { readonly [key: string]: unknown };
type MutableSchema = { [key: string]: unknown };

export interface StructuralOptions {
  /** How many times a recursive $ref is expanded before the node becomes open. */
  readonly maxRecursionDepth: number;
  /** Property names dropped at every level (e.g. credential keys a CR must not hold). */
  readonly omitProperties?: ReadonlySet<string>;
}

/** Formats the API server knows; others are dropped rather than silently ignored. */
const KNOWN_FORMATS = new Set(['uri', 'email', 'hostname', 'ipv4', 'ipv6', 'cidr', 'uuid', 'date', 'date-time', 'byte']);
const PRESERVE = 'x-kubernetes-preserve-unknown-fields';

/**
 * Converts one JSON Schema document (its root may be referenced as `#`).
 *
 * @example toStructuralSchema(z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input' }), { maxRecursionDepth: 2 })
 */
export function toStructuralSchema(root: JsonSchema, options: StructuralOptions): JsonSchema {
  const converter = new Converter(root, options);
  return converter.convert(root, 0, 'the root');
}

class Converter {
  readonly #root: JsonSchema;
  readonly #options: StructuralOptions;

  constructor(root: JsonSchema, options: StructuralOptions) {
    this.#root = root;
    this.#options = options;
  }

  convert(node: JsonSchema, depth: number, where: string): MutableSchema {
    const ref = node['$ref'];
    if (typeof ref === 'string') return this.#convertRef(ref, node, depth, where);
    const union = (node['anyOf'] ?? node['oneOf']) as JsonSchema[] | undefined;
    if (Array.isArray(union)) return this.#convertUnion(node, union, depth, where);
    if (Array.isArray(node['allOf'])) return this.#convertUnion(node, node['allOf'] as JsonSchema[], depth, where);
    const out: MutableSchema = {};
    copyDescription(node, out);
    if (node['const'] !== undefined) {
      out['type'] = jsonTypeOf(node['const']);
      out['enum'] = [node['const']];
      return withNullable(node, out);
    }
    switch (node['type']) {
      case 'object':
        this.#convertObject(node, out, depth, where);
        break;
      case 'array':
        out['type'] = 'array';
        copy(node, out, ['minItems', 'maxItems']);
        out['items'] = isSchema(node['items']) ? this.convert(node['items'], depth, `${where}[]`) : { [PRESERVE]: true };
        break;
      case 'string':
        out['type'] = 'string';
        copy(node, out, ['minLength', 'maxLength', 'pattern', 'enum']);
        if (typeof node['format'] === 'string' && KNOWN_FORMATS.has(node['format'])) out['format'] = node['format'];
        break;
      case 'integer':
      case 'number':
        out['type'] = node['type'];
        copyBounds(node, out);
        copy(node, out, ['enum', 'multipleOf']);
        break;
      case 'boolean':
        out['type'] = 'boolean';
        break;
      default:
        // {} (z.unknown()): any JSON value.
        out[PRESERVE] = true;
    }
    return withNullable(node, out);
  }

  #convertRef(ref: string, node: JsonSchema, depth: number, where: string): MutableSchema {
    if (depth >= this.#options.maxRecursionDepth) {
      return {
        description: 'Nested deeper than this CRD schema describes; validated by the operator.',
        type: 'object',
        [PRESERVE]: true,
      };
    }
    const target = resolveRef(this.#root, ref);
    if (target === undefined) throw new Error(`${where}: cannot resolve $ref ${ref}`);
    const converted = this.convert(target, depth + 1, where);
    copyDescription(node, converted);
    return converted;
  }

  #convertObject(node: JsonSchema, out: MutableSchema, depth: number, where: string): void {
    out['type'] = 'object';
    const properties = node['properties'] as Record<string, JsonSchema> | undefined;
    const additional = node['additionalProperties'];
    const open = additional === true || (isSchema(additional) && Object.keys(additional).length === 0);
    if (properties !== undefined && Object.keys(properties).length > 0) {
      const converted: Record<string, MutableSchema> = {};
      for (const [name, child] of Object.entries(properties)) {
        if (this.#options.omitProperties?.has(name)) continue;
        converted[name] = this.convert(child, depth, `${where}.${name}`);
      }
      out['properties'] = converted;
      const required = (node['required'] as string[] | undefined)?.filter((name) => name in converted);
      if (required !== undefined && required.length > 0) out['required'] = required;
      if (open) out[PRESERVE] = true;
      return;
    }
    if (open || additional === undefined) {
      out[PRESERVE] = true;
      return;
    }
    if (isSchema(additional)) out['additionalProperties'] = this.convert(additional, depth, `${where}.*`);
    // additionalProperties: false with no properties is an empty object: nothing to describe.
  }

  /** Structural schemas cannot branch on type: collapse a union into one node. */
  #convertUnion(node: JsonSchema, branches: JsonSchema[], depth: number, where: string): MutableSchema {
    const nullable = branches.some((branch) => branch['type'] === 'null') || node['nullable'] === true;
    const rest = branches.filter((branch) => branch['type'] !== 'null');
    const converted = rest.map((branch) => this.convert(branch, depth, where));
    const out: MutableSchema = {};
    copyDescription(node, out);
    const types = new Set(converted.map((branch) => branch['type']));
    const first = converted[0];
    if (converted.length === 1 && first !== undefined) {
      Object.assign(out, first);
    } else if (types.size === 1 && types.has('string') && converted.every((branch) => Array.isArray(branch['enum']))) {
      out['type'] = 'string';
      out['enum'] = [...new Set(converted.flatMap((branch) => branch['enum'] as unknown[]))];
    } else if (types.size === 1 && types.has('object')) {
      out['type'] = 'object';
      const properties: Record<string, unknown> = {};
      for (const branch of converted) Object.assign(properties, branch['properties'] ?? {});
      if (Object.keys(properties).length > 0) out['properties'] = properties;
      if (converted.some((branch) => branch[PRESERVE] === true) || Object.keys(properties).length === 0) out[PRESERVE] = true;
    } else if (types.size === 1 && first !== undefined && (types.has('string') || types.has('number') || types.has('integer') || types.has('boolean'))) {
      out['type'] = first['type'];
    } else if (types.size === 2 && types.has('string') && types.has('integer')) {
      out['x-kubernetes-int-or-string'] = true;
    } else {
      out[PRESERVE] = true;
    }
    if (nullable) out['nullable'] = true;
    return out;
  }
}

function resolveRef(root: JsonSchema, ref: string): JsonSchema | undefined {
  if (ref === '#') return root;
  const match = /^#\/(\$defs|definitions)\/(.+)$/.exec(ref);
  if (match === null) return undefined;
  const defs = root[match[1] ?? ''] as Record<string, JsonSchema> | undefined;
  return defs?.[match[2] ?? ''];
}

function isSchema(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function copy(from: JsonSchema, to: MutableSchema, keys: readonly string[]): void {
  for (const key of keys) if (from[key] !== undefined) to[key] = from[key];
}

function copyDescription(from: JsonSchema, to: MutableSchema): void {
  if (typeof from['description'] === 'string') to['description'] = from['description'];
}

// zod gives ±Number.MAX_SAFE_INTEGER for plain ints: not a real bound, and noisy in a CRD.
function copyBounds(from: JsonSchema, to: MutableSchema): void {
  const minimum = from['minimum'];
  const maximum = from['maximum'];
  if (typeof minimum === 'number' && minimum > Number.MIN_SAFE_INTEGER) to['minimum'] = minimum;
  if (typeof maximum === 'number' && maximum < Number.MAX_SAFE_INTEGER) to['maximum'] = maximum;
  if (from['exclusiveMinimum'] === true && to['minimum'] !== undefined) to['exclusiveMinimum'] = true;
  if (from['exclusiveMaximum'] === true && to['maximum'] !== undefined) to['exclusiveMaximum'] = true;
}

function withNullable(from: JsonSchema, to: MutableSchema): MutableSchema {
  if (from['nullable'] === true) to['nullable'] = true;
  return to;
}

function jsonTypeOf(value: unknown): string {
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}
