// Checks objects against OpenAI's published schemas (shared/reference/openai-openapi):
// a small JSON-schema subset — $ref, type, required, properties, items, enum, nullable,
// anyOf/oneOf/allOf — enough for the Batch, File and Fine-tuning shapes. An optional
// property may be null: OpenAI's own answers send null for moments that have not happened
// (`in_progress_at`, `output_file_id`…) though the schema types them as plain values.
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { load } from 'js-yaml';

export const OPENAPI_PATH = resolve(import.meta.dirname, '../../../shared/reference/openai-openapi/openapi.yaml');

type Schema = Record<string, unknown>;
let schemas: Record<string, Schema> | undefined;

function components(): Record<string, Schema> {
  if (schemas === undefined) {
    const document = load(readFileSync(OPENAPI_PATH, 'utf8')) as { components: { schemas: Record<string, Schema> } };
    schemas = document.components.schemas;
  }
  return schemas;
}

export const openapiAvailable = existsSync(OPENAPI_PATH);

/** Problems of `value` against components.schemas[name]; empty when it conforms. */
export function schemaProblems(name: string, value: unknown): string[] {
  const problems: string[] = [];
  check({ $ref: `#/components/schemas/${name}` }, value, name, problems);
  return problems;
}

function deref(schema: Schema): Schema {
  let current = schema;
  for (let depth = 0; typeof current['$ref'] === 'string' && depth < 20; depth++) {
    const name = (current['$ref'] as string).replace('#/components/schemas/', '');
    const found = components()[name];
    if (found === undefined) throw new Error(`unknown schema ${name}`);
    current = found;
  }
  return current;
}

function check(raw: Schema, value: unknown, path: string, problems: string[]): void {
  const schema = deref(raw);
  if (value === null) {
    const nullable = schema['nullable'] === true || schema['type'] === 'null' || alternatives(schema).some((s) => deref(s)['type'] === 'null');
    if (!nullable) problems.push(`${path}: null is not allowed`);
    return;
  }
  const choices = alternatives(schema);
  if (choices.length > 0) {
    const fits = choices.some((choice) => {
      const inner: string[] = [];
      check(choice, value, path, inner);
      return inner.length === 0;
    });
    if (!fits) problems.push(`${path}: matches none of anyOf/oneOf`);
  }
  for (const part of (schema['allOf'] as Schema[] | undefined) ?? []) check(part, value, path, problems);
  const type = schema['type'];
  if (Array.isArray(schema['enum']) && !schema['enum'].includes(value)) problems.push(`${path}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema['enum'])}`);
  switch (type) {
    case 'string':
      if (typeof value !== 'string') problems.push(`${path}: expected string, got ${typeof value}`);
      return;
    case 'integer':
      if (!Number.isInteger(value)) problems.push(`${path}: expected integer, got ${JSON.stringify(value)}`);
      return;
    case 'number':
      if (typeof value !== 'number') problems.push(`${path}: expected number`);
      return;
    case 'boolean':
      if (typeof value !== 'boolean') problems.push(`${path}: expected boolean`);
      return;
    case 'array':
      if (!Array.isArray(value)) problems.push(`${path}: expected array`);
      else if (schema['items'] !== undefined) value.forEach((item, index) => check(schema['items'] as Schema, item, `${path}[${index}]`, problems));
      return;
    default:
      break;
  }
  if (type === 'object' || schema['properties'] !== undefined) {
    if (typeof value !== 'object' || Array.isArray(value)) {
      problems.push(`${path}: expected object`);
      return;
    }
    const record = value as Record<string, unknown>;
    for (const key of (schema['required'] as string[] | undefined) ?? []) if (!(key in record)) problems.push(`${path}.${key}: required`);
    const properties = (schema['properties'] as Record<string, Schema> | undefined) ?? {};
    for (const [key, item] of Object.entries(record)) {
      const property = properties[key];
      const optionalNull = item === null && !((schema['required'] as string[] | undefined) ?? []).includes(key);
      if (property !== undefined && item !== undefined && !optionalNull) check(property, item, `${path}.${key}`, problems);
    }
  }
}

function alternatives(schema: Schema): Schema[] {
  return [...((schema['anyOf'] as Schema[] | undefined) ?? []), ...((schema['oneOf'] as Schema[] | undefined) ?? [])];
}
