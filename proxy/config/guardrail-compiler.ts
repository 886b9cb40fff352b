import type { FieldIssue } from '../openai/zod-issues.ts';
import type { GuardrailEntry } from './guardrail-entry-schema.ts';
import type { RoutingConfig } from './routing-config-schema.ts';

// What loading a state asks of the guardrail engine (floor 5): only it knows the checks, so
// only it can tell whether a check id exists and its parameters compile (a regex, a JSON
// schema). The state floor names the question; the composition root (start-gateway.ts,
// bin/, the operator) passes the answer, guardrails/builtin-guardrail-compiler.ts.

/** The routing-config fields that hold hooks and guardrails. */
export type GuardrailFields = Pick<RoutingConfig, 'before_request_hooks' | 'after_request_hooks' | 'input_guardrails' | 'output_guardrails'>;

export interface GuardrailCompiler {
  /** Problems of a saved guardrail's checks (unknown id, bad parameters), with paths inside the entry (`checks[0].parameters.rule`). */
  entryIssues(entry: GuardrailEntry): readonly FieldIssue[];
  /** Problems only compiling a config's hooks and guardrails finds, worded as routing-config issues (`input_guardrails[0]…: …`); none when it compiles. */
  configIssues(settings: GuardrailFields, saved: ReadonlyMap<string, GuardrailEntry>): readonly string[];
}
