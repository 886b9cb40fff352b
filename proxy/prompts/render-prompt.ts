// Renders a stored prompt with a render request's variables into chat-completion
// parameters (the spec's "Rendered prompt data"). Pure: no I/O, never throws.
//
// Decisions (docs/prompts.md):
// - The body is `variables` plus, at its root, `model` and the prompt parameters
//   (PROMPT_PARAMETER_KEYS). A `hyperparameters` key, `messages`, or any other key is a
//   400 naming it, so a typo never silently does nothing.
// - No HTML escaping: prompts are not HTML. `{{x}}`, `{{{x}}}` and `{{&x}}` all insert the
//   value verbatim; an object or array value is inserted as JSON.
// - Every name a template looks up while rendering must resolve, following Mustache's
//   context rules (a section's value first, then the enclosing ones); names inside
//   a section that is off (false, null, "", 0, []) are not needed. All missing names are
//   reported at once. Lookups see own properties only, never Object.prototype.

import Mustache from 'mustache';
import type { RenderOptions, TemplateSpans } from 'mustache';
import type { z } from 'zod';
import { GatewayError } from '../errors.ts';
import { modelId } from '../openai/shared-fields.ts';
import { describeZodIssue, formatIssue, formatIssuePath } from '../openai/zod-issues.ts';
import { PROMPT_PARAMETER_KEYS, PromptParametersSchema, parsePromptTemplate } from './prompt-schema.ts';
import type { PromptEntry } from './prompt-schema.ts';

export type RenderPromptResult = { ok: true; data: Record<string, unknown> } | { ok: false; error: GatewayError };

/** A message of the rendered data: the spec's `{ role, content, name? }`. */
export type RenderedMessage = { role: string; content: string; name?: string };

const ALLOWED_ROOT_KEYS: ReadonlySet<string> = new Set(['variables', 'model', ...PROMPT_PARAMETER_KEYS]);

// ── Template lookups ────────────────────────────────────────────────────────────────

type Resolution = { readonly found: boolean; readonly value: unknown };

const NOT_FOUND: Resolution = { found: false, value: undefined };

function ownKey(holder: unknown, key: string): Resolution {
  if (typeof holder === 'string') {
    // A string's own properties, as Mustache sees them: `{{name.length}}`, `{{name.0}}`.
    if (key === 'length') return { found: true, value: holder.length };
    const char = /^(?:0|[1-9]\d*)$/.test(key) ? holder[Number(key)] : undefined;
    return char === undefined ? NOT_FOUND : { found: true, value: char };
  }
  if (typeof holder !== 'object' || holder === null || !Object.hasOwn(holder, key)) return NOT_FOUND;
  return { found: true, value: (holder as Record<string, unknown>)[key] };
}

/** Mustache's lookup rules in one view: a plain name needs an object, a dotted path walks in. */
function resolveIn(view: unknown, name: string): Resolution {
  if (name.indexOf('.') <= 0) return typeof view === 'object' ? ownKey(view, name) : NOT_FOUND;
  let current: Resolution = { found: true, value: view };
  for (const segment of name.split('.')) {
    current = ownKey(current.value, segment);
    if (!current.found) return NOT_FOUND;
  }
  return current;
}

/**
 * Mustache's context stack with own-property lookups: `{{constructor}}` never reaches
 * Object.prototype (whose functions Mustache would call as lambdas), and the
 * missing-variable check below sees exactly what rendering sees.
 */
class VariablesContext extends Mustache.Context {
  override push(view: unknown): VariablesContext {
    return new VariablesContext(view, this);
  }

  override lookup(name: string): unknown {
    return this.resolve(name).value;
  }

  resolve(name: string): Resolution {
    if (name === '.') return { found: true, value: this.view };
    for (let context: Mustache.Context | undefined = this; context !== undefined; context = context.parent) {
      const hit = resolveIn(context.view, name);
      if (hit.found) return hit;
    }
    return NOT_FOUND;
  }
}

function isSectionOff(value: unknown): boolean {
  return !value || (Array.isArray(value) && value.length === 0);
}

/** Adds to `missing` every name rendering `tokens` in `context` would fail to resolve. */
function collectMissing(tokens: TemplateSpans, context: VariablesContext, missing: Set<string>): void {
  for (const token of tokens) {
    const [kind, name] = token;
    const children = token[4];
    if (kind === 'name' || kind === '&') {
      if (!context.resolve(name).found) missing.add(name);
      continue;
    }
    if ((kind !== '#' && kind !== '^') || !Array.isArray(children)) continue;
    const { found, value } = context.resolve(name);
    if (!found) {
      // Report the names inside too, so one response lists everything to add.
      missing.add(name);
      collectMissing(children, context, missing);
    } else if (kind === '^') {
      if (isSectionOff(value)) collectMissing(children, context, missing);
    } else if (Array.isArray(value)) {
      for (const item of value) collectMissing(children, context.push(item), missing);
    } else if (typeof value === 'object' || typeof value === 'string' || typeof value === 'number') {
      if (!isSectionOff(value)) collectMissing(children, context.push(value), missing);
    } else if (value === true) {
      collectMissing(children, context, missing);
    }
  }
}

// ── Compiled prompts ────────────────────────────────────────────────────────────────

type CompiledMessage = { role: string; name: string | undefined; template: string; tokens: TemplateSpans };
type CompiledPrompt = { messages: readonly CompiledMessage[]; variables: readonly string[] };

// Keyed by the entry object: a reload builds new entries, so stale ones are collected.
const compiledPrompts = new WeakMap<PromptEntry, CompiledPrompt>();

/** Unescaped tags become plain ones: with escaping off they mean the same, and objects print as JSON. */
function insertVerbatim(tokens: TemplateSpans): TemplateSpans {
  for (const token of tokens) {
    if (token[0] === '&') token[0] = 'name';
    const children = token[4];
    if (Array.isArray(children)) insertVerbatim(children);
  }
  return tokens;
}

function collectNames(tokens: TemplateSpans, names: Set<string>): void {
  for (const token of tokens) {
    const [kind, name] = token;
    if ((kind === 'name' || kind === '&' || kind === '#' || kind === '^') && name !== '.') {
      names.add(name.indexOf('.') > 0 ? (name.split('.')[0] ?? name) : name);
    }
    const children = token[4];
    if (Array.isArray(children)) collectNames(children, names);
  }
}

function compile(prompt: PromptEntry): CompiledPrompt {
  const cached = compiledPrompts.get(prompt);
  if (cached !== undefined) return cached;
  const names = new Set<string>();
  const messages = prompt.messages.map((message) => {
    const tokens = insertVerbatim(parsePromptTemplate(message.content));
    collectNames(tokens, names);
    return { role: message.role, name: message.name, template: message.content, tokens };
  });
  const compiled: CompiledPrompt = { messages, variables: [...names] };
  compiledPrompts.set(prompt, compiled);
  return compiled;
}

/**
 * The variable names a prompt's templates refer to, in order of first use (`{{user.name}}`
 * counts as `user`). Names inside a `{{#list}}` section may be fields of the list's items.
 *
 * @example promptVariablesOf({ …, messages: [{ role: 'user', content: 'Hi {{name}}, {{#vip}}welcome{{/vip}}' }] })
 *   // → ['name', 'vip']
 */
export function promptVariablesOf(prompt: PromptEntry): string[] {
  return [...compile(prompt).variables];
}

// ── Rendering ───────────────────────────────────────────────────────────────────────

function insertValue(value: unknown): string {
  if (typeof value === 'string') return value;
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

const RENDER_OPTIONS: RenderOptions = { escape: insertValue };
const renderer = new Mustache.Writer();

function renderMessages(compiled: CompiledPrompt, variables: object): RenderedMessage[] {
  return compiled.messages.map((message) => {
    // @types/mustache types tokens as string[][]; they are the parser's own spans.
    const tokens = message.tokens as unknown as string[][];
    const context = new VariablesContext(variables);
    const content = renderer.renderTokens(tokens, context, undefined, message.template, RENDER_OPTIONS);
    const { role, name } = message;
    return name === undefined ? { role, content } : { role, content, name };
  });
}

// ── Request checks ──────────────────────────────────────────────────────────────────

type Failure = { ok: false; error: GatewayError };

function invalid(message: string, param: string | null): Failure {
  return { ok: false, error: new GatewayError('AIGW_ERR_INVALID_BODY', message, { param }) };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

function closestAllowedKey(key: string): string | undefined {
  let best: { key: string; distance: number } | undefined;
  for (const candidate of ALLOWED_ROOT_KEYS) {
    const distance = editDistance(key.toLowerCase(), candidate);
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { key: candidate, distance };
  }
  return best?.key;
}

const ALLOWED_KEYS_HINT =
  'A render request takes "variables" and, at the root, model and the prompt parameters: ' +
  PROMPT_PARAMETER_KEYS.join(', ');

/** The keys a render request may not carry, explained; undefined when all are allowed. */
function checkRootKeys(body: Record<string, unknown>): Failure | undefined {
  if (Object.hasOwn(body, 'hyperparameters')) {
    const where = 'at the root of the body next to "variables", not under a "hyperparameters" key';
    return invalid(`Hyperparameters go ${where}: send {"variables": {…}, "temperature": 0.2}`, 'hyperparameters');
  }
  if (Object.hasOwn(body, 'messages')) {
    const why = 'the prompt\'s templates are the messages; pass template values in "variables"';
    return invalid(`A render request cannot set "messages": ${why}`, 'messages');
  }
  const unknown = Object.keys(body).filter((key) => !ALLOWED_ROOT_KEYS.has(key));
  const first = unknown[0];
  if (first === undefined) return undefined;
  const suggestion = closestAllowedKey(first);
  const hint = suggestion === undefined ? '' : ` (did you mean "${suggestion}"?)`;
  const named = unknown.map((key) => `"${key}"`).join(', ');
  return invalid(`Unknown parameter${unknown.length > 1 ? 's' : ''} ${named}${hint}. ${ALLOWED_KEYS_HINT}`, first);
}

function readVariables(variables: unknown, compiled: CompiledPrompt): { ok: true; data: object } | Failure {
  if (isPlainObject(variables)) return { ok: true, data: variables };
  if (variables === undefined) {
    const uses = compiled.variables.length === 0 ? '' : ` (this prompt uses: ${compiled.variables.join(', ')})`;
    return invalid(`"variables" is required: an object of template values${uses}`, 'variables');
  }
  const got = Array.isArray(variables) ? 'an array' : variables === null ? 'null' : `a ${typeof variables}`;
  return invalid(`"variables" must be an object of template values, not ${got}`, 'variables');
}

/** Root parameters, checked with the bounds the prompt's own defaults obey. */
const OverridesSchema = PromptParametersSchema.extend({ model: modelId.optional() });

type Overrides = z.infer<typeof OverridesSchema>;

function parseOverrides(overrides: Record<string, unknown>): { ok: true; data: Overrides } | Failure {
  const parsed = OverridesSchema.safeParse(overrides, { error: describeZodIssue });
  if (parsed.success) return { ok: true, data: parsed.data };
  const issues = parsed.error.issues;
  const message = issues.map((issue) => formatIssue(issue)).join('; ');
  return invalid(message, formatIssuePath(issues[0]?.path ?? []) || null);
}

/**
 * Renders `prompt` for a render request body: `{ variables, …root parameters }`.
 * Returns `{ model, messages, …parameters }` with root parameters merged over the
 * prompt's defaults, or an AIGW_ERR_INVALID_BODY error whose `param` names the field.
 *
 * @example renderPrompt(welcome, { variables: { tone: 'terse' }, temperature: 0.9 })
 *   // → { ok: true, data: { model: 'gpt-4o-mini',
 *   //     messages: [{ role: 'system', content: 'You are terse.' }], temperature: 0.9 } }
 */
export function renderPrompt(prompt: PromptEntry, request: unknown): RenderPromptResult {
  if (!isPlainObject(request)) return invalid('The request body must be a JSON object with "variables"', null);
  const keyProblem = checkRootKeys(request);
  if (keyProblem !== undefined) return keyProblem;

  let compiled: CompiledPrompt;
  try {
    compiled = compile(prompt);
  } catch (cause) {
    // The state schema parses templates at load, so only an unvalidated entry gets here.
    const error = new GatewayError('AIGW_ERR_INTERNAL', `Prompt "${prompt.id}" has an invalid template`, { cause });
    return { ok: false, error };
  }

  const { variables: givenVariables, ...rest } = request;
  const variables = readVariables(givenVariables, compiled);
  if (!variables.ok) return variables;
  const overrides = parseOverrides(rest);
  if (!overrides.ok) return overrides;

  const missing = new Set<string>();
  const root = new VariablesContext(variables.data);
  for (const message of compiled.messages) collectMissing(message.tokens, root, missing);
  if (missing.size > 0) return invalid(`Missing variables: ${[...missing].join(', ')}`, 'variables');

  let messages: RenderedMessage[];
  try {
    messages = renderMessages(compiled, variables.data);
  } catch (cause) {
    // Only a value JSON.stringify cannot print (nested too deeply) gets here.
    const options = { param: 'variables', cause };
    return { ok: false, error: new GatewayError('AIGW_ERR_INVALID_BODY', 'variables could not be rendered', options) };
  }
  const { model = prompt.model, ...parameters } = overrides.data;
  const data: Record<string, unknown> = model === undefined ? { messages } : { model, messages };
  return { ok: true, data: Object.assign(data, prompt.parameters, parameters) };
}
