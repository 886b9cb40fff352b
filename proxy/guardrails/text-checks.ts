// Checks over the plain text of a request or an answer: patterns, counts, words, case,
// endings. All pure; none rewrites anything.

import { z } from 'zod';
import { defineCheck, neverTransforms } from './check-definition.ts';
import { compileUserRegex, RegexFlagsSchema } from './user-regex.ts';

const NoParametersSchema = z.strictObject({});

const count = z.int().min(0);

/** At least one bound, and min ≤ max; reported on the parameters object / on the min key. */
function checkBounds(minKey: string, maxKey: string, min: number | undefined, max: number | undefined, ctx: z.RefinementCtx): void {
  if (min === undefined && max === undefined) ctx.addIssue({ code: 'custom', path: [], message: `needs ${minKey}, ${maxKey} or both` });
  else if ((min ?? 0) > (max ?? Infinity)) ctx.addIssue({ code: 'custom', path: [minKey], message: `must not be greater than ${maxKey}` });
}

const SentenceRangeSchema = z
  .strictObject({ minSentences: count.optional(), maxSentences: count.optional() })
  .superRefine((value, ctx) => checkBounds('minSentences', 'maxSentences', value.minSentences, value.maxSentences, ctx));

const WordRangeSchema = z
  .strictObject({ minWords: count.optional(), maxWords: count.optional() })
  .superRefine((value, ctx) => checkBounds('minWords', 'maxWords', value.minWords, value.maxWords, ctx));

const CharacterRangeSchema = z
  .strictObject({ minCharacters: count.optional(), maxCharacters: count.optional() })
  .superRefine((value, ctx) => checkBounds('minCharacters', 'maxCharacters', value.minCharacters, value.maxCharacters, ctx));

function inRange(value: number, min: number | undefined, max: number | undefined): boolean {
  return value >= (min ?? 0) && value <= (max ?? Infinity);
}

// Segmenters are stateless between calls: build them once.
const sentenceSegmenter = new Intl.Segmenter(undefined, { granularity: 'sentence' });
const wordSegmenter = new Intl.Segmenter(undefined, { granularity: 'word' });

/** Sentences by Unicode segmentation (UAX #29), ignoring blank ones. */
export function countSentences(text: string): number {
  let sentences = 0;
  for (const { segment } of sentenceSegmenter.segment(text)) if (/[\p{L}\p{N}]/u.test(segment)) sentences += 1;
  return sentences;
}

/** Words by Unicode segmentation: numbers and words in any script, punctuation excluded. */
export function countWords(text: string): number {
  let words = 0;
  for (const { isWordLike } of wordSegmenter.segment(text)) if (isWordLike === true) words += 1;
  return words;
}

/** Unicode characters (code points), so an emoji or an accented letter counts once. */
export function countCharacters(text: string): number {
  let characters = 0;
  for (const _ of text) characters += 1;
  return characters;
}

export const regexMatchCheck = defineCheck({
  id: 'default.regexMatch',
  parameters: z.strictObject({ rule: z.string().min(1), flags: RegexFlagsSchema.optional() }),
  mayTransform: neverTransforms,
  prepare({ rule, flags }) {
    const regex = compileUserRegex(rule, flags ?? '', ['rule']);
    return ({ text }) => {
      const matched = regex.test(text);
      return { verdict: matched, data: { rule, matched } };
    };
  },
});

export const sentenceCountCheck = defineCheck({
  id: 'default.sentenceCount',
  parameters: SentenceRangeSchema,
  mayTransform: neverTransforms,
  prepare({ minSentences, maxSentences }) {
    return ({ text }) => {
      const sentences = countSentences(text);
      return { verdict: inRange(sentences, minSentences, maxSentences), data: { sentences, minSentences, maxSentences } };
    };
  },
});

export const wordCountCheck = defineCheck({
  id: 'default.wordCount',
  parameters: WordRangeSchema,
  mayTransform: neverTransforms,
  prepare({ minWords, maxWords }) {
    return ({ text }) => {
      const words = countWords(text);
      return { verdict: inRange(words, minWords, maxWords), data: { words, minWords, maxWords } };
    };
  },
});

export const characterCountCheck = defineCheck({
  id: 'default.characterCount',
  parameters: CharacterRangeSchema,
  mayTransform: neverTransforms,
  prepare({ minCharacters, maxCharacters }) {
    return ({ text }) => {
      const characters = countCharacters(text);
      return { verdict: inRange(characters, minCharacters, maxCharacters), data: { characters, minCharacters, maxCharacters } };
    };
  },
});

/** How a list of expected items combines: any one present, all present, none present. */
export const ListOperatorSchema = z.enum(['any', 'all', 'none']);
export type ListOperator = z.infer<typeof ListOperatorSchema>;

/** Applies `operator` to which of `expected` were found. */
export function listVerdict(operator: ListOperator, found: number, expected: number): boolean {
  if (operator === 'any') return found > 0;
  if (operator === 'all') return found === expected;
  return found === 0;
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

function isWordBoundary(text: string, index: number): boolean {
  const char = text[index];
  return char === undefined || !LETTER_OR_DIGIT.test(char);
}

/**
 * Whether `needle` occurs in `haystack` as a whole word (or phrase): the characters
 * around it must not continue a word. Both are expected lower-cased.
 */
export function containsWord(haystack: string, needle: string): boolean {
  const startsWithWordChar = LETTER_OR_DIGIT.test(needle[0] ?? '');
  const endsWithWordChar = LETTER_OR_DIGIT.test(needle[needle.length - 1] ?? '');
  for (let at = haystack.indexOf(needle); at !== -1; at = haystack.indexOf(needle, at + 1)) {
    if (startsWithWordChar && !isWordBoundary(haystack, at - 1)) continue;
    if (endsWithWordChar && !isWordBoundary(haystack, at + needle.length)) continue;
    return true;
  }
  return false;
}

export const containsCheck = defineCheck({
  id: 'default.contains',
  parameters: z.strictObject({
    words: z.array(z.string().trim().min(1)).min(1),
    operator: ListOperatorSchema.default('any'),
  }),
  mayTransform: neverTransforms,
  prepare({ words, operator }) {
    const needles = words.map((word) => word.toLowerCase());
    return ({ text }) => {
      const haystack = text.toLowerCase();
      const found = words.filter((_, index) => containsWord(haystack, needles[index] ?? ''));
      return { verdict: listVerdict(operator, found.length, words.length), data: { operator, found } };
    };
  },
});

export const allUppercaseCheck = defineCheck({
  id: 'default.allUppercase',
  parameters: NoParametersSchema,
  mayTransform: neverTransforms,
  prepare() {
    return ({ text }) => ({ verdict: text === text.toUpperCase() });
  },
});

export const allLowercaseCheck = defineCheck({
  id: 'default.allLowercase',
  parameters: NoParametersSchema,
  mayTransform: neverTransforms,
  prepare() {
    return ({ text }) => ({ verdict: text === text.toLowerCase() });
  },
});

export const endsWithCheck = defineCheck({
  id: 'default.endsWith',
  parameters: z.strictObject({ suffix: z.string().min(1) }),
  mayTransform: neverTransforms,
  prepare({ suffix }) {
    return ({ text }) => ({ verdict: text.trimEnd().endsWith(suffix), data: { suffix } });
  },
});

export const notNullCheck = defineCheck({
  id: 'default.notNull',
  parameters: NoParametersSchema,
  mayTransform: neverTransforms,
  prepare() {
    return ({ text }) => ({ verdict: text.trim() !== '' });
  },
});
