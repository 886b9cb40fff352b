// Regexes written by users (routing `$regex` conditions, guardrail regexMatch/regexReplace,
// JSON-schema `pattern`s) come from configs that any API-key holder can send inline, so they
// must not be able to stall the event loop. Every user pattern compiles here. Three layers:
//  1. at compile: the JavaScript syntax is checked (so errors read like JS errors) and
//     patterns with nested quantifiers — `(a+)+`, the classic catastrophic shape — are
//     rejected with safe-regex2 (fastify's checker);
//  2. they run on re2js, a linear-time engine (RE2's automata, no backtracking), so the
//     shapes a star-height checker misses (`(a|a)*$`, `a*a*a*b`) stay linear too.
//     RE2 has no lookarounds or backreferences; such patterns are rejected at compile;
//  3. the text a regex runs on is capped (MAX_REGEX_TEXT_LENGTH), which bounds the cost
//     of one check; a longer text is a check error (passes unless fail_on_error).

import { RE2JS } from 're2js';
import safeRegex from 'safe-regex2';
import { z } from 'zod';
import { UserRegexError, RegexTextTooLongError } from '../errors.ts';

/** The longest text (UTF-16 units) a user regex runs on: ~5 ms of re2js at worst on one core. */
export const MAX_REGEX_TEXT_LENGTH = 262_144;

/** Flags a user regex may carry: i, m, s (u is implied, g is implied by replace). */
export const RegexFlagsSchema = z
  .string()
  .regex(/^(?!.*(.).*\1)[gimsu]*$/, { error: 'must be made of the flags g, i, m, s, u (each once)' });

/** The longest pattern source accepted. */
export const MAX_REGEX_SOURCE_LENGTH = 1024;


/** A user regex compiled for the linear-time engine. */
export interface UserRegex {
  readonly source: string;
  readonly flags: string;
  /** True when the pattern matches somewhere in text. Throws on a text over the cap. */
  test(text: string): boolean;
  /**
   * Replaces every match; `replacement` follows String.prototype.replace
   * (`$&`, `$1`, `$<name>`, `$$`). Throws on a text over the cap.
   */
  replaceAll(text: string, replacement: string): string;
}


function assertWithinCap(text: string): void {
  if (text.length > MAX_REGEX_TEXT_LENGTH) throw new RegexTextTooLongError(text.length, MAX_REGEX_TEXT_LENGTH);
}

function re2Flags(flags: string): number {
  let bits = 0;
  if (flags.includes('i')) bits |= RE2JS.CASE_INSENSITIVE;
  if (flags.includes('m')) bits |= RE2JS.MULTILINE;
  if (flags.includes('s')) bits |= RE2JS.DOTALL;
  return bits;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Compiles a user regex, or throws UserRegexError at `path` saying why not.
 *
 * @example
 * compileUserRegex('\\bsecret\\b', 'i', ['rule']).test('A SECRET plan') // → true
 * compileUserRegex('(a+)+$', '', ['rule']) // throws: may backtrack catastrophically …
 */
export function compileUserRegex(source: string, flags: string, path: ReadonlyArray<string | number>): UserRegex {
  if (source.length > MAX_REGEX_SOURCE_LENGTH) {
    throw new UserRegexError(path, `is longer than ${MAX_REGEX_SOURCE_LENGTH} characters`);
  }
  try {
    new RegExp(source, flags.replace('g', ''));
  } catch (error) {
    throw new UserRegexError(path, `is not a valid regular expression (${reason(error)})`);
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(source), re2Flags(flags));
  } catch (error) {
    throw new UserRegexError(
      path,
      `uses syntax the linear-time regex engine does not support, such as lookarounds or backreferences (${reason(error)})`,
    );
  }
  if (!safeRegex(source)) {
    throw new UserRegexError(
      path,
      'may backtrack catastrophically (a quantifier inside a quantified group, like (a+)+); rewrite it without nesting',
    );
  }
  return {
    source,
    flags,
    test(text) {
      assertWithinCap(text);
      return compiled.test(text);
    },
    replaceAll(text, replacement) {
      assertWithinCap(text);
      return compiled.matcher(text).replaceAll(replacement);
    },
  };
}

/** A compiler for ajv's `code.regExp`: JSON-schema patterns on the same engine, same rules. */
export function userRegexForJsonSchema(pattern: string): { test(text: string): boolean } {
  try {
    const regex = compileUserRegex(pattern, 'u', ['pattern']);
    return { test: (text) => regex.test(text) };
  } catch (error) {
    throw new Error(`pattern ${JSON.stringify(pattern)} ${error instanceof UserRegexError ? error.reason : reason(error)}`, { cause: error });
  }
}
