// Checks over who asks for what: the model, the request's metadata, the endpoint.
// They ignore the text, so they give the same verdict before and after the call.

import { z } from 'zod';
import type { InferenceEndpoint } from '../openai/inference-endpoint.ts';
import { defineCheck, neverTransforms } from './check-definition.ts';
import { ListOperatorSchema, listVerdict } from './text-checks.ts';

/** `gpt-4o*` → matches `gpt-4o` and `gpt-4o-mini`; other characters are literal. */
export function modelPattern(glob: string): (model: string) => boolean {
  if (!glob.includes('*')) return (model) => model === glob;
  const parts = glob.split('*');
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  const middle = parts.slice(1, -1);
  return (model) => {
    if (model.length < first.length + last.length || !model.startsWith(first) || !model.endsWith(last)) return false;
    let at = first.length;
    const end = model.length - last.length;
    for (const part of middle) {
      const found = model.indexOf(part, at);
      if (found === -1 || found + part.length > end) return false;
      at = found + part.length;
    }
    return true;
  };
}

export const modelWhitelistCheck = defineCheck({
  id: 'default.modelWhitelist',
  parameters: z.strictObject({ models: z.array(z.string().min(1)).min(1) }),
  mayTransform: neverTransforms,
  prepare({ models }) {
    const matchers = models.map(modelPattern);
    return ({ model, requestBody }) => {
      const requested = model ?? (typeof requestBody['model'] === 'string' ? requestBody['model'] : undefined);
      if (requested === undefined) return { verdict: false, data: { explanation: 'the request names no model' } };
      return { verdict: matchers.some((matches) => matches(requested)), data: { model: requested } };
    };
  },
});

export const requiredMetadataKeysCheck = defineCheck({
  id: 'default.requiredMetadataKeys',
  parameters: z.strictObject({
    metadataKeys: z.array(z.string().min(1)).min(1),
    operator: ListOperatorSchema.default('all'),
  }),
  mayTransform: neverTransforms,
  prepare({ metadataKeys, operator }) {
    return ({ metadata }) => {
      const present = metadataKeys.filter((key) => Object.hasOwn(metadata, key));
      const missing = metadataKeys.filter((key) => !Object.hasOwn(metadata, key));
      return { verdict: listVerdict(operator, present.length, metadataKeys.length), data: { operator, present, missing } };
    };
  },
});

const ENDPOINTS = ['chat.completions', 'completions', 'embeddings', 'responses', 'messages', 'messages.count_tokens'] as const satisfies readonly InferenceEndpoint[];
const EndpointListSchema = z.array(z.enum(ENDPOINTS)).min(1);

export const allowedRequestTypesCheck = defineCheck({
  id: 'default.allowedRequestTypes',
  parameters: z
    .strictObject({ allowedTypes: EndpointListSchema.optional(), blockedTypes: EndpointListSchema.optional() })
    .superRefine((value, ctx) => {
      if (value.allowedTypes === undefined && value.blockedTypes === undefined) {
        ctx.addIssue({ code: 'custom', path: [], message: 'needs allowedTypes, blockedTypes or both' });
      }
      const both = (value.allowedTypes ?? []).filter((type) => value.blockedTypes?.includes(type));
      if (both.length > 0) ctx.addIssue({ code: 'custom', path: ['blockedTypes'], message: `${both.join(', ')} also allowed` });
    }),
  mayTransform: neverTransforms,
  prepare({ allowedTypes, blockedTypes }) {
    return ({ endpoint }) => {
      const allowed = (allowedTypes === undefined || allowedTypes.includes(endpoint)) && blockedTypes?.includes(endpoint) !== true;
      return { verdict: allowed, data: { requestType: endpoint } };
    };
  },
});
