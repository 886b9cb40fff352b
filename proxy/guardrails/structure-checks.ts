// Checks over structure inside the text: JSON (schema, keys), URLs, code.

import { createRequire } from 'node:module';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { z } from 'zod';
import { defineCheck, neverTransforms } from './check-definition.ts';
import { CODE_FORMATS, detectCodeFormats, resolveCodeFormat } from './code-detection.ts';
import { findJsonObjects, findJsonValues } from './json-in-text.ts';
import { ListOperatorSchema, listVerdict } from './text-checks.ts';
import { userRegexForJsonSchema } from './user-regex.ts';
import { CheckParameterError } from '../errors.ts';

// Ajv (≈ 13 MiB loaded) is required on the first JSON-schema check a config uses, not at
// start-up; a check is compiled synchronously, so it comes through require (Ajv is CommonJS).
const require = createRequire(import.meta.url);

function loadAjv(): { Ajv: new (options: Record<string, unknown>) => Ajv; addFormats: (ajv: Ajv) => Ajv } {
  const { Ajv } = require('ajv') as typeof import('ajv');
  // ajv-formats is `module.exports = plugin` with a `default` alias.
  const formats = require('ajv-formats') as { (ajv: Ajv): Ajv; default?: (ajv: Ajv) => Ajv };
  return { Ajv, addFormats: formats.default ?? formats };
}

const MAX_REPORTED_ERRORS = 10;

// An Ajv instance keeps every schema it compiled (and their patterns) for its lifetime,
// and inline configs arrive per request, so one instance serves a bounded number of
// compiles and is then replaced; validators keep their own instance alive as long as
// their config lives. (A fresh instance per schema would recompile the meta-schema,
// ~4 ms, every time.) Patterns run on the linear-time engine (see user-regex.ts).
const COMPILES_PER_AJV = 256;
let ajvInUse: { readonly ajv: Ajv; compiles: number } | undefined;

function sharedAjv(): Ajv {
  if (ajvInUse === undefined || ajvInUse.compiles >= COMPILES_PER_AJV) {
    const { Ajv, addFormats } = loadAjv();
    const regExp = Object.assign((pattern: string) => userRegexForJsonSchema(pattern), { code: 'userRegexForJsonSchema' });
    const ajv = new Ajv({ allErrors: true, strict: false, logger: false, code: { regExp } });
    addFormats(ajv);
    ajvInUse = { ajv, compiles: 0 };
  }
  ajvInUse.compiles += 1;
  return ajvInUse.ajv;
}

function compileJsonSchema(schema: Record<string, unknown>): ValidateFunction {
  if (schema['$async'] === true) throw new CheckParameterError(['schema', '$async'], 'async schemas are not supported');
  const ajv = sharedAjv();
  try {
    return ajv.compile(schema);
  } catch (error) {
    throw new CheckParameterError(['schema'], `is not a valid JSON schema (${error instanceof Error ? error.message : String(error)})`);
  } finally {
    // Unregister it (and its $id), so another config may reuse the id with another schema.
    ajv.removeSchema(schema);
  }
}

function describeSchemaErrors(errors: readonly ErrorObject[] | null | undefined): Array<{ path: string; message: string }> {
  return (errors ?? []).slice(0, MAX_REPORTED_ERRORS).map((error) => ({
    path: error.instancePath === '' ? '/' : error.instancePath,
    message: error.message ?? error.keyword,
  }));
}

export const jsonSchemaCheck = defineCheck({
  id: 'default.jsonSchema',
  parameters: z.strictObject({ schema: z.record(z.string(), z.unknown()) }),
  mayTransform: neverTransforms,
  prepare({ schema }) {
    const validate = compileJsonSchema(schema);
    return ({ text }) => {
      const candidates = findJsonValues(text);
      if (candidates.length === 0) return { verdict: false, data: { explanation: 'no JSON found in the text' } };
      let firstErrors: ReturnType<typeof describeSchemaErrors> | undefined;
      for (const candidate of candidates) {
        if (validate(candidate)) return { verdict: true, data: { candidates: candidates.length } };
        firstErrors ??= describeSchemaErrors(validate.errors);
      }
      return { verdict: false, data: { explanation: 'no JSON in the text matches the schema', errors: firstErrors ?? [] } };
    };
  },
});

export const jsonKeysCheck = defineCheck({
  id: 'default.jsonKeys',
  parameters: z.strictObject({
    keys: z.array(z.string().min(1)).min(1),
    operator: ListOperatorSchema.default('any'),
  }),
  mayTransform: neverTransforms,
  prepare({ keys, operator }) {
    return ({ text }) => {
      const objects = findJsonObjects(text);
      if (objects.length === 0) return { verdict: false, data: { explanation: 'no JSON object found in the text' } };
      // The first object that satisfies the operator wins; else report the first.
      let report: { present: string[] } | undefined;
      for (const object of objects) {
        const present = keys.filter((key) => Object.hasOwn(object, key));
        if (listVerdict(operator, present.length, keys.length)) return { verdict: true, data: { operator, present } };
        report ??= { present };
      }
      return { verdict: false, data: { operator, present: report?.present ?? [] } };
    };
  },
});

// http(s) URLs up to whitespace or a character that cannot appear unescaped in one.
const URL_CANDIDATE = /\bhttps?:\/\/[^\s<>"'`]+/gi;
const HOST_LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const TOP_LEVEL_DOMAIN = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;
const MAX_DNS_HOSTS = 20;
const DNS_TIMEOUT_MS = 3_000;

/** URLs in the text, without the punctuation that usually follows one in prose. */
export function findUrls(text: string): string[] {
  return Array.from(text.matchAll(URL_CANDIDATE), (match) => {
    let url = match[0].replace(/[.,;:!?]+$/, '');
    if (url.endsWith(')') && !url.includes('(')) url = url.slice(0, -1).replace(/[.,;:!?]+$/, '');
    return url;
  });
}

/** A URL is valid when it parses and its host is an IP address, localhost, or a well-formed DNS name. */
export function isValidUrl(candidate: string): boolean {
  if (!URL.canParse(candidate)) return false;
  const hostname = new URL(candidate).hostname;
  if (hostname === 'localhost' || isIP(hostname) !== 0 || hostname.startsWith('[')) return true;
  if (hostname.length > 253) return false;
  const labels = hostname.replace(/\.$/, '').split('.');
  const tld = labels[labels.length - 1] ?? '';
  return labels.length >= 2 && labels.every((label) => HOST_LABEL.test(label)) && TOP_LEVEL_DOMAIN.test(tld);
}

async function resolves(hostname: string): Promise<boolean> {
  if (hostname === 'localhost' || isIP(hostname) !== 0 || hostname.startsWith('[')) return true;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), DNS_TIMEOUT_MS);
  });
  try {
    return await Promise.race([lookup(hostname).then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const validUrlsCheck = defineCheck({
  id: 'default.validUrls',
  parameters: z.strictObject({ onlyDNS: z.boolean().default(false) }),
  mayTransform: neverTransforms,
  prepare({ onlyDNS }) {
    return async ({ text }) => {
      // Counts only: URLs can carry tokens in their query strings.
      const urls = findUrls(text);
      const invalid = urls.filter((url) => !isValidUrl(url)).length;
      if (!onlyDNS || invalid > 0) return { verdict: invalid === 0, data: { urls: urls.length, invalid } };
      const hosts = [...new Set(urls.map((url) => new URL(url).hostname))];
      if (hosts.length > MAX_DNS_HOSTS) throw new Error(`text names ${hosts.length} hosts; at most ${MAX_DNS_HOSTS} are resolved`);
      const unresolved = (await Promise.all(hosts.map(async (host) => ((await resolves(host)) ? [] : [host])))).flat();
      return { verdict: unresolved.length === 0, data: { urls: urls.length, invalid, unresolvedHosts: unresolved } };
    };
  },
});

const FormatSchema = z.string().transform((name, ctx) => {
  const format = resolveCodeFormat(name);
  if (format === undefined) {
    ctx.addIssue({ code: 'custom', message: `must be one of ${CODE_FORMATS.join(', ')}` });
    return z.NEVER;
  }
  return format;
});

export const containsCodeCheck = defineCheck({
  id: 'default.containsCode',
  parameters: z.strictObject({ format: FormatSchema }),
  mayTransform: neverTransforms,
  prepare({ format }) {
    return ({ text }) => {
      const { fenced, heuristic } = detectCodeFormats(text);
      const verdict = fenced.has(format) || heuristic.has(format);
      return { verdict, data: { format, fenced: [...fenced], heuristic: [...heuristic] } };
    };
  },
});
