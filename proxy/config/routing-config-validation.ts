// parseRoutingConfig(): the one entry point that turns untrusted input (an
// inline x-gateway-config header or a saved config from the state file) into a
// RoutingConfig, or into a list of readable issues for a 400 / a load warning.
import { z } from 'zod';
import { didYouMean } from './did-you-mean.ts';
import { RoutingConfigSchema } from './routing-config-schema.ts';
import type { RoutingConfig } from './routing-config-schema.ts';
import { collectRoutingRuleIssues, isPlainObject } from './routing-config-rules.ts';
import type { ConfigIssue } from './routing-config-rules.ts';
import { formatIssue, fromZodIssue } from '../openai/zod-issues.ts';
import { vendorKeyConflicts, withSpecConfigKeys } from './vendor-names.ts';

/** How many levels of `targets` may nest below the root config. */
export const MAX_TARGET_DEPTH = 8;

export type RoutingConfigParseResult =
  | { readonly success: true; readonly config: RoutingConfig }
  | { readonly success: false; readonly issues: string[] };

/**
 * Validates a config against the schema and the cross-key rules and reports
 * every problem as `path: message`. Never throws.
 *
 * @example
 * parseRoutingConfig({ retry: { attempts: 9 } })
 * // → { success: false, issues: ['retry.attempts: must be at most 5'] }
 */
export function parseRoutingConfig(raw: unknown): RoutingConfigParseResult {
  try {
    const tooDeep = findTooDeepTargets(raw);
    if (tooDeep !== undefined) return { success: false, issues: [formatConfigIssue(tooDeep)] };
    // Real vendor names (azure_region, aws_region, …) stand for the spec's keys.
    const input = withSpecConfigKeys(raw);
    // reportInput lets the formatter tell a missing key ("Required") from a wrong value.
    const parsed = RoutingConfigSchema.safeParse(input, { reportInput: true });
    const issues: ConfigIssue[] = parsed.success ? [] : parsed.error.issues.flatMap((issue) => fromZodIssue(issue, []));
    issues.push(...collectRoutingRuleIssues(input), ...vendorKeyConflicts(input));
    if (parsed.success && issues.length === 0) return { success: true, config: parsed.data };
    return { success: false, issues: unique(issues.map(withKeyHint).map(formatConfigIssue)) };
  } catch (error) {
    // Only exotic inputs get here (throwing getters, proxies); JSON never does.
    const reason = error instanceof Error ? error.message : String(error);
    return { success: false, issues: [`config: could not be validated (${reason})`] };
  }
}

/** Joins issues for one error message, e.g. a 400 body: `a: Required; b.c: unknown key`. */
export function formatConfigIssues(issues: readonly string[]): string {
  return issues.join('; ');
}

/**
 * Walks only the `targets` chains, iteratively, so neither this walk nor the
 * recursive schema can overflow the stack (or loop on a cyclic object).
 */
function findTooDeepTargets(input: unknown): ConfigIssue | undefined {
  const pending: Array<{ node: unknown; path: ReadonlyArray<string | number>; depth: number }> = [
    { node: input, path: [], depth: 0 },
  ];
  for (let item = pending.pop(); item !== undefined; item = pending.pop()) {
    if (!isPlainObject(item.node)) continue;
    const targets = item.node['targets'];
    if (!Array.isArray(targets)) continue;
    const targetsPath = [...item.path, 'targets'];
    if (item.depth >= MAX_TARGET_DEPTH) {
      return { path: targetsPath, message: `must not nest more than ${MAX_TARGET_DEPTH} levels deep` };
    }
    targets.forEach((node: unknown, index) => pending.push({ node, path: [...targetsPath, index], depth: item.depth + 1 }));
  }
  return undefined;
}

/** `retyr: unknown key` → `retyr: unknown key (did you mean "retry"?)`, from the keys the schema allows there. */
function withKeyHint(issue: ConfigIssue): ConfigIssue {
  const key = issue.path.at(-1);
  if (issue.message !== 'unknown key' || typeof key !== 'string') return issue;
  const known = keysAt(issue.path.slice(0, -1));
  return known === undefined ? issue : { ...issue, message: `${issue.message}${didYouMean(key, known)}` };
}

/** The keys of the object schema at `path` inside a routing config; undefined past a union or a record. */
function keysAt(path: ReadonlyArray<string | number>): string[] | undefined {
  let schema: z.core.$ZodType | undefined = RoutingConfigSchema;
  for (const segment of path) {
    while (schema instanceof z.ZodOptional) schema = schema.unwrap();
    if (typeof segment === 'number') schema = schema instanceof z.ZodArray ? schema.element : undefined;
    else schema = schema instanceof z.ZodObject ? (schema.shape as Record<string, z.core.$ZodType>)[segment] : undefined;
    if (schema === undefined) return undefined;
  }
  while (schema instanceof z.ZodOptional) schema = schema.unwrap();
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : undefined;
}

/** `targets[1].retry.attempts: Required`; the root is `config`. */
function formatConfigIssue(issue: ConfigIssue): string {
  return formatIssue(issue, 'config');
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}
