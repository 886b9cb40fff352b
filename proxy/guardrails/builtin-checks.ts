// The registry of built-in checks (`default.*`), by full id.

import type { RegisteredCheck } from './check-definition.ts';
import { piiCheck, regexReplaceCheck } from './mutator-checks.ts';
import { allowedRequestTypesCheck, modelWhitelistCheck, requiredMetadataKeysCheck } from './request-checks.ts';
import { containsCodeCheck, jsonKeysCheck, jsonSchemaCheck, validUrlsCheck } from './structure-checks.ts';
import {
  allLowercaseCheck,
  allUppercaseCheck,
  characterCountCheck,
  containsCheck,
  endsWithCheck,
  notNullCheck,
  regexMatchCheck,
  sentenceCountCheck,
  wordCountCheck,
} from './text-checks.ts';
import { webhookCheck } from './webhook-check.ts';

/** Every built-in check by id (`default.regexMatch`, …). */
export const BUILTIN_CHECKS: ReadonlyMap<string, RegisteredCheck> = new Map(
  [
    regexMatchCheck,
    sentenceCountCheck,
    wordCountCheck,
    characterCountCheck,
    jsonSchemaCheck,
    jsonKeysCheck,
    containsCheck,
    validUrlsCheck,
    containsCodeCheck,
    allUppercaseCheck,
    allLowercaseCheck,
    endsWithCheck,
    notNullCheck,
    modelWhitelistCheck,
    requiredMetadataKeysCheck,
    allowedRequestTypesCheck,
    regexReplaceCheck,
    webhookCheck,
    piiCheck,
  ].map((check) => [check.id, check]),
);

/** `regexMatch` → `default.regexMatch`; ids with a dot are kept as written. */
export function normalizeCheckId(id: string): string {
  return id.includes('.') ? id : `default.${id}`;
}
