import { GatewayError } from '../errors.ts';

// Field rules shared by the batch, file and fine-tuning routes (spec: Endpoints, Limits):
// list cursors and limits, metadata bounds. Each failure is a 400 naming its field.

export interface ListQuery {
  readonly limit: number;
  readonly after: string | undefined;
}

export interface ListQueryRules {
  readonly defaultLimit: number;
  readonly maxLimit: number;
}

/** `?limit=&after=` → validated values; other query keys are left to the caller. */
export function parseListQuery(query: unknown, rules: ListQueryRules): ListQuery {
  const values = isRecord(query) ? query : {};
  const after = optionalQueryString(values, 'after');
  const rawLimit = optionalQueryString(values, 'limit');
  if (rawLimit === undefined) return { limit: rules.defaultLimit, after };
  const limit = Number(rawLimit);
  if (!/^\d+$/.test(rawLimit) || !Number.isSafeInteger(limit) || limit < 1 || limit > rules.maxLimit) {
    throw invalid(`limit must be an integer from 1 to ${rules.maxLimit}.`, 'limit');
  }
  return { limit, after };
}

/** A query parameter given at most once, non-empty. */
export function optionalQueryString(values: Record<string, unknown>, name: string): string | undefined {
  const value = values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '') throw invalid(`${name} must be given once, as a non-empty string.`, name);
  return value;
}

export const METADATA_LIMITS = { pairs: 16, keyLength: 64, valueLength: 512 } as const;

/** The spec's metadata: up to 16 string pairs, keys ≤ 64 and values ≤ 512 characters; null allowed. */
export function validateMetadata(value: unknown, param = 'metadata'): Record<string, string> | null {
  if (value === undefined || value === null) return null;
  if (!isRecord(value)) throw invalid(`${param} must be an object of string values.`, param);
  const entries = Object.entries(value);
  if (entries.length > METADATA_LIMITS.pairs) throw invalid(`${param} holds at most ${METADATA_LIMITS.pairs} pairs.`, param);
  for (const [key, item] of entries) {
    if (key.length > METADATA_LIMITS.keyLength) throw invalid(`${param} keys are at most ${METADATA_LIMITS.keyLength} characters.`, `${param}.${key}`);
    if (typeof item !== 'string') throw invalid(`${param}.${key} must be a string.`, `${param}.${key}`);
    if (item.length > METADATA_LIMITS.valueLength) {
      throw invalid(`${param} values are at most ${METADATA_LIMITS.valueLength} characters.`, `${param}.${key}`);
    }
  }
  return value as Record<string, string>;
}

/** The parsed JSON body as an object, or a 400. */
export function bodyObject(body: unknown): Record<string, unknown> {
  if (!isRecord(body)) throw invalid('Request body must be a JSON object.', null);
  return body;
}

export function requiredString(body: Record<string, unknown>, name: string): string {
  const value = body[name];
  if (value === undefined || value === null) throw missing(name);
  if (typeof value !== 'string' || value === '') throw invalid(`${name} must be a non-empty string.`, name);
  return value;
}

export function missing(name: string): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_BODY', `Missing required parameter: '${name}'.`, { param: name });
}

export function invalid(message: string, param: string | null): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_BODY', message, { param });
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
