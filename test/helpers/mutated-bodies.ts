import assert from 'node:assert/strict';
import type { InferenceEndpoint } from '../../proxy/openai/inference-endpoint.ts';
import { LIMIT_VIOLATIONS, VALID_BODIES } from '../fixtures/limits-violations.ts';

// Bodies for the fast checks' differential tests (a fast check may only say "valid" where
// zod does): a base body with one to three fields changed, deterministically.

/** A small deterministic generator (no Math.random: the same bodies every run). */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * `count` copies of `base`, each with one to three of `fields` set to a value of `pool`
 * (undefined deletes the field); the same bodies for the same seed.
 *
 * @example for (const body of mutatedBodies(32, { model: 'm' }, ['model'], ['', 1], 100)) check(body);
 */
export function* mutatedBodies(
  seed: number,
  base: Readonly<Record<string, unknown>>,
  fields: readonly string[],
  pool: readonly unknown[],
  count: number,
): Generator<Record<string, unknown>> {
  const random = generator(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  for (let index = 0; index < count; index++) {
    const body: Record<string, unknown> = { ...base };
    const changes = 1 + Math.floor(random() * 3);
    for (let change = 0; change < changes; change++) {
      const value = pick(pool);
      const field = pick(fields);
      if (value === undefined) delete body[field];
      else body[field] = value;
    }
    yield body;
  }
}

/**
 * The fixtures' verdicts for one endpoint: `fast` says valid only where `zod` does, and never
 * for a limit violation.
 */
export function assertFixturesAgree(endpoint: InferenceEndpoint, fast: (body: Record<string, unknown>) => boolean, zod: (body: unknown) => boolean): void {
  for (const row of [...VALID_BODIES, ...LIMIT_VIOLATIONS]) {
    if (row.endpoint !== endpoint) continue;
    const body = JSON.parse(JSON.stringify(row.body)) as Record<string, unknown>;
    if (fast(body)) assert.equal(zod(body), true, row.name);
  }
  for (const row of LIMIT_VIOLATIONS) if (row.endpoint === endpoint) assert.equal(fast(JSON.parse(JSON.stringify(row.body))), false, row.name);
}
