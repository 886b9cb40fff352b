// Checks that rewrite what they check: regexReplace and the PII detector. Before the call
// they rewrite the request's texts (what the upstream receives), after it the answer's
// (what the caller receives). Findings are counted, never echoed: hook_results travel to
// the caller and the log, and must not carry the data they were meant to hide.

import { z } from 'zod';
import type { CheckInput } from './check-definition.ts';
import { defineCheck } from './check-definition.ts';
import { mapRequestText, mapResponseText, type TextRewrite } from './guardrail-text.ts';
import { findPii, PII_CATEGORIES, redactSpans, type PiiCategory } from './pii-detectors.ts';
import { compileUserRegex, MAX_REGEX_TEXT_LENGTH, RegexFlagsSchema } from './user-regex.ts';
import { RegexTextTooLongError } from '../errors.ts';

/** The longest text the PII detector scans (its patterns are ours and linear; this bounds the cost). */
export const MAX_PII_TEXT_LENGTH = 1_048_576;

/** The body under check with `rewrite` applied to each of its texts (same reference when unchanged). */
function rewriteBody(input: CheckInput, rewrite: TextRewrite): unknown {
  return input.phase === 'before'
    ? mapRequestText(input.endpoint, input.requestBody, rewrite)
    : mapResponseText(input.endpoint, input.responseBody, rewrite);
}

export const regexReplaceCheck = defineCheck({
  id: 'default.regexReplace',
  parameters: z.strictObject({
    rule: z.string().min(1),
    flags: RegexFlagsSchema.optional(),
    replacement: z.string().default('[REDACTED]'),
    failOnDetection: z.boolean().default(false),
  }),
  mayTransform: () => true,
  prepare({ rule, flags, replacement, failOnDetection }) {
    const regex = compileUserRegex(rule, flags ?? '', ['rule']);
    return (input) => {
      // Each text is under the cap on its own; the cap bounds their sum.
      if (input.text.length > MAX_REGEX_TEXT_LENGTH) throw new RegexTextTooLongError(input.text.length, MAX_REGEX_TEXT_LENGTH);
      let replaced = 0;
      const body = rewriteBody(input, (text) => {
        if (!regex.test(text)) return text;
        replaced += 1;
        return regex.replaceAll(text, replacement);
      });
      return { verdict: !(failOnDetection && replaced > 0), data: { rule, textsChanged: replaced }, body };
    };
  },
});

const PiiModeSchema = z.enum(['detect', 'redact']);

export const piiCheck = defineCheck({
  id: 'default.pii',
  parameters: z.strictObject({
    categories: z.array(z.enum(PII_CATEGORIES)).min(1).default([...PII_CATEGORIES]),
    mode: PiiModeSchema.default('detect'),
  }),
  mayTransform: ({ mode }) => mode === 'redact',
  prepare({ categories, mode }) {
    const wanted = new Set<PiiCategory>(categories);
    return (input) => {
      if (input.text.length > MAX_PII_TEXT_LENGTH) {
        throw new Error(`text is ${input.text.length} characters long, over the ${MAX_PII_TEXT_LENGTH} the PII detector scans; not checked`);
      }
      const found: Partial<Record<PiiCategory, number>> = {};
      const count = (text: string): ReturnType<typeof findPii> => {
        const spans = findPii(text, wanted);
        for (const span of spans) found[span.category] = (found[span.category] ?? 0) + 1;
        return spans;
      };
      if (mode === 'detect') {
        const spans = count(input.text);
        return { verdict: spans.length === 0, data: { mode, found } };
      }
      const body = rewriteBody(input, (text) => {
        const spans = count(text);
        return spans.length === 0 ? text : redactSpans(text, spans);
      });
      return { verdict: true, data: { mode, found, redacted: Object.keys(found).length > 0 }, body };
    };
  },
});
