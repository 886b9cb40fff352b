import { readFile } from 'node:fs/promises';
import { load as loadYaml } from 'js-yaml';
import type { z } from 'zod';
import { substituteEnv } from './env-substitution.ts';
import { parseRoutingConfig } from './routing-config-validation.ts';
import { buildGatewayState, savedConfigIssue, sha256Hex, type GatewayState } from './gateway-state.ts';
import type { GuardrailCompiler } from './guardrail-compiler.ts';
import { neverMatchProblem } from '../ratelimit/policy-matching.ts';
import { CredentialsSchema, GatewayStateSchema, type GatewayStateDocument } from './state-schema.ts';

// load → substitute ${ENV} → validate → build snapshot. Nothing here swaps the live
// snapshot: the caller decides (a failed load keeps the last good one serving).

export interface StateSources {
  /** The state YAML (the ConfigMap's file in a cluster). */
  statePath: string;
  /** Optional credentials YAML (the Secret's file in a cluster). */
  credentialsPath?: string | undefined;
}

export type LoadResult =
  | { ok: true; state: GatewayState; warnings: string[] }
  | { ok: false; errors: string[]; warnings: string[] };

export interface SourceTexts {
  state: string;
  credentials?: string | undefined;
}

export async function readStateSources(sources: StateSources): Promise<SourceTexts> {
  const state = await readFile(sources.statePath, 'utf8');
  const credentials =
    sources.credentialsPath === undefined ? undefined : await readFile(sources.credentialsPath, 'utf8');
  return { state, credentials };
}

/** Content hash over every source, so a change in either file triggers a reload. */
export function hashSources(texts: SourceTexts): string {
  return sha256Hex(`${texts.state}\u0000${texts.credentials ?? ''}`).slice(0, 16);
}

/**
 * Parse + validate: source texts → a complete snapshot, or every problem found. Never throws
 * and installs nothing; every state source (files, the Kubernetes API) goes through here and
 * the caller swaps the live state only on `ok`. Empty, torn or placeholder-keyed documents fail.
 * `guardrailCompiler` is the guardrail engine's (guardrails/builtin-guardrail-compiler.ts).
 */
export function loadStateFromTexts(
  texts: SourceTexts,
  env: Readonly<Record<string, string | undefined>>,
  guardrailCompiler: GuardrailCompiler,
): LoadResult {
  const stateDoc = parseDocument(texts.state, 'state', env, GatewayStateSchema);
  const credentialsDoc =
    texts.credentials === undefined
      ? { value: undefined, errors: [] }
      : parseDocument(texts.credentials, 'credentials', env, CredentialsSchema);
  const errors = [...stateDoc.errors, ...credentialsDoc.errors];
  if (errors.length > 0 || stateDoc.value === undefined) {
    // Report the saved configs' problems too, so one pass of `validate` shows everything.
    return { ok: false, errors: [...errors, ...savedConfigIssues(stateDoc.raw)], warnings: [] };
  }
  const built = buildGatewayState(stateDoc.value, credentialsDoc.value, hashSources(texts), guardrailCompiler);
  if (built.state === undefined) return { ok: false, errors: built.errors, warnings: built.warnings };
  return { ok: true, state: built.state, warnings: [...built.warnings, ...neverMatchingPolicies(stateDoc.value)] };
}

export async function loadStateFromFiles(
  sources: StateSources,
  env: Readonly<Record<string, string | undefined>>,
  guardrailCompiler: GuardrailCompiler,
): Promise<LoadResult> {
  let texts: SourceTexts;
  try {
    texts = await readStateSources(sources);
  } catch (error) {
    return { ok: false, errors: [`cannot read state: ${(error as Error).message}`], warnings: [] };
  }
  return loadStateFromTexts(texts, env, guardrailCompiler);
}

function parseDocument<S extends z.ZodType>(
  text: string,
  label: string,
  env: Readonly<Record<string, string | undefined>>,
  schema: S,
): { value: z.output<S> | undefined; raw?: unknown; errors: string[] } {
  let raw: unknown;
  // An empty (or comments-only) document is what a truncating writer (`cat new > file`) or
  // a torn write leaves behind: never a state, or every key would answer 401 until the next write.
  if (text.replace(/^\s*#.*$/gm, '').trim() === '') return { value: undefined, errors: [emptyDocument(label)] };
  try {
    raw = loadYaml(text);
  } catch (error) {
    return { value: undefined, errors: [`${label}: invalid YAML: ${(error as Error).message.split('\n')[0]}`] };
  }
  if (raw === undefined || raw === null) return { value: undefined, errors: [emptyDocument(label)] };
  const substituted = substituteEnv(raw, env);
  const parsed = schema.safeParse(substituted.value);
  const errors = substituted.issues.map((issue) => `${label}: ${issue}`);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      errors.push(`${label}: ${formatPath(issue.path)}: ${issue.message}`);
    }
    return { value: undefined, raw: substituted.value, errors };
  }
  return { value: errors.length > 0 ? undefined : parsed.data, raw: substituted.value, errors };
}

// A warning, not an error: one contradictory RateLimitPolicy resource must not block every
// other change of the state. The API refuses such policies outright.
function neverMatchingPolicies(document: GatewayStateDocument): string[] {
  const warnings: string[] = [];
  document.rateLimitPolicies.forEach((policy, index) => {
    const problem = neverMatchProblem(policy);
    if (problem !== undefined) warnings.push(`state: rateLimitPolicies[${index}].${problem.param}: ${problem.message}`);
  });
  return warnings;
}

function emptyDocument(label: string): string {
  return `${label}: the document is empty (an empty or truncated file is never a valid ${label}; the last good one keeps serving)`;
}

function savedConfigIssues(raw: unknown): string[] {
  const configs = (raw as { configs?: unknown } | undefined)?.configs;
  if (!Array.isArray(configs)) return [];
  const issues: string[] = [];
  configs.forEach((entry: unknown, index) => {
    const config = (entry as { config?: unknown } | null)?.config;
    if (config === undefined) return;
    const id = (entry as { id?: unknown }).id;
    const parsed = parseRoutingConfig(config);
    if (!parsed.success) issues.push(...parsed.issues.map((issue) => `state: ${savedConfigIssue(typeof id === 'string' && id !== '' ? id : `[${index}]`, issue)}`));
  });
  return issues;
}

function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}
