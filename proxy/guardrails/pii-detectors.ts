// Finds personal data and secrets in text: e-mail addresses, phone numbers, payment
// card numbers (Luhn), IBANs (ISO 13616 mod-97), IP addresses and API-key-like secrets.
// Each detector proposes spans; checksums and parsers weed out look-alikes. Patterns are
// ours (not user input) and written to stay linear: bounded repetitions, no nesting.

import { isIPv6 } from 'node:net';

export const PII_CATEGORIES = ['email', 'phone', 'credit_card', 'iban', 'ip_address', 'api_key'] as const;
export type PiiCategory = (typeof PII_CATEGORIES)[number];

/** One finding: `text.slice(start, end)` is the personal datum. */
export interface PiiSpan {
  readonly category: PiiCategory;
  readonly start: number;
  readonly end: number;
}

type Detector = (text: string) => PiiSpan[];

function spansOf(category: PiiCategory, text: string, pattern: RegExp, accept: (match: string) => boolean = () => true): PiiSpan[] {
  const spans: PiiSpan[] = [];
  for (const match of text.matchAll(pattern)) {
    if (accept(match[0])) spans.push({ category, start: match.index, end: match.index + match[0].length });
  }
  return spans;
}

const EMAIL = /(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.){1,8}[A-Za-z]{2,63}(?![\w-])/g;

/** Luhn checksum over a string of digits. */
export function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index += 1) {
    let digit = Number(digits[digits.length - 1 - index]);
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

// 13 to 19 digits, optionally grouped by single spaces or dashes.
const CARD = /(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])/g;

function isCardNumber(candidate: string): boolean {
  const digits = candidate.replace(/[ -]/g, '');
  return digits.length >= 13 && digits.length <= 19 && !/^(\d)\1+$/.test(digits) && passesLuhn(digits);
}

/** ISO 13616: move the first four characters to the end, letters to numbers, mod 97 must be 1. */
export function passesIbanChecksum(iban: string): boolean {
  const rearranged = iban.slice(4) + iban.slice(0, 4);
  let remainder = 0;
  for (const char of rearranged) {
    const value = char >= 'A' && char <= 'Z' ? char.charCodeAt(0) - 55 : Number(char);
    if (Number.isNaN(value)) return false;
    remainder = Number(`${remainder}${value}`) % 97;
  }
  return remainder === 1;
}

// Country code, check digits, then 11–30 alphanumerics, optionally in space-separated groups.
const IBAN = /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])/g;

function ibanSpans(text: string): PiiSpan[] {
  const spans: PiiSpan[] = [];
  for (const match of text.matchAll(IBAN)) {
    // A trailing upper-case word may have been swallowed ("… 00 OK"): drop groups until valid.
    let candidate = match[0];
    while (candidate.replace(/ /g, '').length >= 15) {
      const compact = candidate.replace(/ /g, '');
      if (compact.length <= 34 && passesIbanChecksum(compact)) {
        spans.push({ category: 'iban', start: match.index, end: match.index + candidate.length });
        break;
      }
      const lastSpace = candidate.lastIndexOf(' ');
      if (lastSpace === -1) break;
      candidate = candidate.slice(0, lastSpace);
    }
  }
  return spans;
}

const OCTET = '(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`(?<![\\d.])${OCTET}(?:\\.${OCTET}){3}(?![\\d]|\\.\\d)`, 'g');
const IPV6_CANDIDATE = /(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%\w{1,16})?(?![\w:])/g;

// Secrets with a recognisable prefix, then secrets assigned to a telling name.
// `sk-` keys must also look random, so a slug like sk-learn-is-a-python-library is not one.
const SK_KEY = /(?<![\w-])sk-(?:[A-Za-z0-9]{1,16}-)?[A-Za-z0-9_-]{20,200}(?![\w-])/g; // OpenAI, Anthropic (sk-ant-…), sk-proj-…
const KEY_PATTERNS: readonly RegExp[] = [
  /(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])/g, // AWS access key ids
  /(?<!\w)gh[pousr]_[A-Za-z0-9]{36,255}(?!\w)/g, // GitHub tokens
  /(?<!\w)github_pat_[A-Za-z0-9_]{22,255}(?!\w)/g,
  /(?<![\w-])xox[abprs]-[A-Za-z0-9-]{10,200}(?![\w-])/g, // Slack
  /(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])/g, // Google API keys
];
const ASSIGNED_SECRET =
  /\b(?:api[_-]?key|apikey|secret(?:[_-]?key)?|access[_-]?(?:key|token)|auth[_-]?token|token|password|passwd|client[_-]?secret)["']?[ \t]{0,4}[:=][ \t]{0,4}["']?([A-Za-z0-9_\-./+=]{16,256})/gid;

/** Shannon entropy in bits per character. */
export function entropyBitsPerChar(value: string): number {
  const counts = new Map<string, number>();
  for (const char of value) counts.set(char, (counts.get(char) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) {
    const p = count / value.length;
    bits -= p * Math.log2(p);
  }
  return bits;
}

/** Random-looking: high entropy and at least two of lower case, upper case, digits. */
function looksRandom(value: string): boolean {
  const classes = [/[a-z]/, /[A-Z]/, /\d/].filter((pattern) => pattern.test(value)).length;
  return classes >= 2 && entropyBitsPerChar(value) >= 3.5;
}

function apiKeySpans(text: string): PiiSpan[] {
  const spans = [...spansOf('api_key', text, SK_KEY, looksRandom), ...KEY_PATTERNS.flatMap((pattern) => spansOf('api_key', text, pattern))];
  for (const match of text.matchAll(ASSIGNED_SECRET)) {
    const value = match[1];
    const indices = match.indices?.[1];
    if (value !== undefined && indices !== undefined && looksRandom(value)) {
      spans.push({ category: 'api_key', start: indices[0], end: indices[1] });
    }
  }
  return spans;
}

// International or grouped numbers with 9–15 digits; dates and versions are not phones.
const PHONE = /(?<![\w+.-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,5}(?:[ .-]?\d{2,5}){1,5}(?![\w-]|\.\d)/g;

function isPhoneNumber(candidate: string): boolean {
  const digits = candidate.replace(/\D/g, '');
  if (digits.length < 9 || digits.length > 15) return false;
  if (/^\d{4}[-./]\d{1,2}[-./]\d{1,2}$/.test(candidate) || /^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$/.test(candidate)) return false;
  // A bare run of digits is a phone only with a + prefix or 10+ digits.
  return /[ .()+-]/.test(candidate) || digits.length >= 10;
}

/** Detectors by category; earlier categories win where spans overlap (a card is not a phone). */
const DETECTORS: ReadonlyArray<readonly [PiiCategory, Detector]> = [
  ['api_key', apiKeySpans],
  ['email', (text) => spansOf('email', text, EMAIL)],
  ['iban', ibanSpans],
  ['credit_card', (text) => spansOf('credit_card', text, CARD, isCardNumber)],
  ['ip_address', (text) => [...spansOf('ip_address', text, IPV4), ...spansOf('ip_address', text, IPV6_CANDIDATE, (m) => isIPv6(m.replace(/%.*/, '')))]],
  ['phone', (text) => spansOf('phone', text, PHONE, isPhoneNumber)],
];

/**
 * Personal data in `text` of the given categories, sorted by position, without overlaps.
 *
 * @example
 * findPii('mail me: ann@example.com', new Set(['email'])) // → [{ category: 'email', start: 9, end: 24 }]
 */
export function findPii(text: string, categories: ReadonlySet<PiiCategory>): PiiSpan[] {
  const kept: PiiSpan[] = []; // sorted by start, disjoint
  for (const [category, detect] of DETECTORS) {
    if (!categories.has(category)) continue;
    for (const span of detect(text)) {
      const at = firstEndingAfter(kept, span.start);
      const next = kept[at];
      if (next === undefined || next.start >= span.end) kept.splice(at, 0, span);
    }
  }
  return kept;
}

/** Index of the first kept span that ends after `position` (binary search). */
function firstEndingAfter(kept: readonly PiiSpan[], position: number): number {
  let low = 0;
  let high = kept.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((kept[middle]?.end ?? Infinity) <= position) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** The placeholder a redacted span becomes: `[REDACTED_EMAIL]`. */
export function redactionLabel(category: PiiCategory): string {
  return `[REDACTED_${category.toUpperCase()}]`;
}

/** `text` with every span replaced by its placeholder (spans sorted and disjoint). */
export function redactSpans(text: string, spans: readonly PiiSpan[]): string {
  let out = '';
  let at = 0;
  for (const span of spans) {
    out += text.slice(at, span.start) + redactionLabel(span.category);
    at = span.end;
  }
  return out + text.slice(at);
}
