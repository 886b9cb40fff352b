// The `query` of a conditional strategy: a Mongo-style filter over the request, compiled
// once into a predicate (DESIGN.md §2). Paths: `metadata.<key>` (x-gateway-metadata),
// `params.<dotted.path>` (the request body; array indices as numbers), `url.pathname`.
// Operators: $eq $ne $gt $gte $lt $lte $in $nin $regex $exists $and $or; several keys in
// one object mean AND; a plain value means $eq.

import { compileUserRegex, MAX_REGEX_TEXT_LENGTH, type UserRegex } from '../patterns/user-regex.ts';
import { UserRegexError, QueryCompileError } from '../errors.ts';

export interface QueryInput {
  readonly metadata: Readonly<Record<string, unknown>> | undefined;
  readonly params: Readonly<Record<string, unknown>>;
  readonly url: { readonly pathname: string };
}

export type QueryPredicate = (input: QueryInput) => boolean;

const FIELD_OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$regex', '$exists']);



/** Compiles a query object; throws QueryCompileError naming the offending key. */
export function compileQuery(query: unknown, where = 'query'): QueryPredicate {
  if (!isRecord(query)) throw new QueryCompileError(`${where}: must be an object`);
  const parts: QueryPredicate[] = [];
  for (const [key, condition] of Object.entries(query)) {
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(condition) || condition.length === 0) {
        throw new QueryCompileError(`${where}.${key}: must be a non-empty array of queries`);
      }
      const subs = condition.map((sub, index) => compileQuery(sub, `${where}.${key}[${index}]`));
      parts.push(key === '$and' ? (input) => subs.every((sub) => sub(input)) : (input) => subs.some((sub) => sub(input)));
      continue;
    }
    if (key.startsWith('$')) throw new QueryCompileError(`${where}.${key}: unknown operator`);
    const read = compilePath(key, `${where}.${key}`);
    const test = compileCondition(condition, `${where}.${key}`);
    parts.push((input) => test(read(input)));
  }
  if (parts.length === 1 && parts[0] !== undefined) return parts[0];
  return (input) => parts.every((part) => part(input));
}

function compilePath(path: string, where: string): (input: QueryInput) => unknown {
  const [root, ...rest] = path.split('.');
  if (root === 'url') {
    if (rest.length !== 1 || rest[0] !== 'pathname') throw new QueryCompileError(`${where}: only url.pathname is available`);
    return (input) => input.url.pathname;
  }
  if (root !== 'metadata' && root !== 'params') {
    throw new QueryCompileError(`${where}: paths start with metadata., params. or url.pathname`);
  }
  if (rest.length === 0 || rest.some((segment) => segment === '')) throw new QueryCompileError(`${where}: incomplete path`);
  return (input) => {
    let value: unknown = root === 'metadata' ? input.metadata : input.params;
    for (const segment of rest) {
      if (Array.isArray(value) && /^\d+$/.test(segment)) value = value[Number(segment)];
      else if (isRecord(value) && Object.hasOwn(value, segment)) value = value[segment];
      else return undefined;
    }
    return value;
  };
}

function compileCondition(condition: unknown, where: string): (value: unknown) => boolean {
  if (!isRecord(condition) || !Object.keys(condition).some((key) => key.startsWith('$'))) {
    return (value) => equals(value, condition);
  }
  const tests: Array<(value: unknown) => boolean> = [];
  for (const [operator, operand] of Object.entries(condition)) {
    if (!FIELD_OPERATORS.has(operator)) throw new QueryCompileError(`${where}.${operator}: unknown operator`);
    tests.push(compileOperator(operator, operand, `${where}.${operator}`));
  }
  return (value) => tests.every((test) => test(value));
}

function compileOperator(operator: string, operand: unknown, where: string): (value: unknown) => boolean {
  switch (operator) {
    case '$eq':
      return (value) => equals(value, operand);
    case '$ne':
      return (value) => !equals(value, operand);
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      if (typeof operand !== 'number' && typeof operand !== 'string') {
        throw new QueryCompileError(`${where}: must be a number or a string`);
      }
      return (value) => compare(operator, value, operand);
    }
    case '$in':
    case '$nin': {
      if (!Array.isArray(operand)) throw new QueryCompileError(`${where}: must be an array`);
      const found = (value: unknown): boolean => operand.some((item) => equals(value, item));
      return operator === '$in' ? found : (value) => !found(value);
    }
    case '$regex': {
      // A request may send this query inline: it runs on the linear-time engine, and a value
      // longer than the engine's text cap never matches.
      if (typeof operand !== 'string') throw new QueryCompileError(`${where}: must be a string`);
      let regex: UserRegex;
      try {
        regex = compileUserRegex(operand, '', [where]);
      } catch (error) {
        if (!(error instanceof UserRegexError)) throw error;
        throw new QueryCompileError(`${where}: ${error.reason.replace('not a valid regular expression', 'an invalid regular expression')}`);
      }
      return (value) => typeof value === 'string' && value.length <= MAX_REGEX_TEXT_LENGTH && regex.test(value);
    }
    case '$exists': {
      if (typeof operand !== 'boolean') throw new QueryCompileError(`${where}: must be true or false`);
      return (value) => (value !== undefined) === operand;
    }
    default:
      throw new QueryCompileError(`${where}: unknown operator`);
  }
}

function compare(operator: string, value: unknown, operand: number | string): boolean {
  if (typeof value !== typeof operand) return false;
  const left = value as number | string;
  if (operator === '$gt') return left > operand;
  if (operator === '$gte') return left >= operand;
  if (operator === '$lt') return left < operand;
  return left <= operand;
}

/** Equality as Mongo does it for our inputs: scalars by value, arrays match if any item equals. */
function equals(value: unknown, expected: unknown): boolean {
  if (Array.isArray(value) && !Array.isArray(expected)) return value.some((item) => equals(item, expected));
  if (value === expected) return true;
  if (typeof value === 'object' && value !== null && typeof expected === 'object' && expected !== null) {
    return JSON.stringify(value) === JSON.stringify(expected);
  }
  return false;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
