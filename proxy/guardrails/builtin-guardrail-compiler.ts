// The guardrail engine's answer to what loading a state asks (config/guardrail-compiler.ts),
// with the built-in checks. Passed in by whoever loads a state: the state floor never imports it.

import type { GuardrailCompiler } from '../config/guardrail-compiler.ts';
import { GuardrailConfigError } from '../errors.ts';
import { BUILTIN_CHECKS } from './builtin-checks.ts';
import { compileCheck } from './compile-check.ts';
import { compileGuardrails } from './compile-guardrails.ts';

export const BUILTIN_GUARDRAIL_COMPILER: GuardrailCompiler = Object.freeze<GuardrailCompiler>({
  entryIssues(entry) {
    return entry.checks.flatMap((check, index) => {
      const compiled = compileCheck(check.id, check.parameters, ['checks', index], BUILTIN_CHECKS);
      return 'issues' in compiled ? compiled.issues : [];
    });
  },
  configIssues(settings, saved) {
    try {
      compileGuardrails(settings, saved);
      return [];
    } catch (error) {
      if (error instanceof GuardrailConfigError) return error.issues;
      throw error;
    }
  },
});
