import { bodyObject, invalid, isRecord, missing, requiredString, validateMetadata } from '../batches/request-validation.ts';

// POST /v1/fine_tuning/jobs body rules (spec: Endpoints, Limits). Checked here, then the
// client's bytes are forwarded unchanged.

export const FINE_TUNING_METHODS = ['supervised', 'dpo', 'reinforcement'] as const;
export const MAX_INTEGRATIONS = 5;
export const MAX_SUFFIX_LENGTH = 64;

/** GET /v1/fine_tuning/jobs: default 20; GET …/checkpoints: default 10 (both at most 100). */
export const JOB_LIST_RULES = { defaultLimit: 20, maxLimit: 100 } as const;
export const CHECKPOINT_LIST_RULES = { defaultLimit: 10, maxLimit: 100 } as const;

export function validateCreateFineTuningJob(body: unknown): void {
  const fields = bodyObject(body);
  requiredString(fields, 'model');
  requiredString(fields, 'training_file');
  const suffix = requiredString(fields, 'suffix');
  if (suffix.length > MAX_SUFFIX_LENGTH) throw invalid(`suffix is at most ${MAX_SUFFIX_LENGTH} characters.`, 'suffix');
  const method = fields['method'];
  if (method === undefined || method === null) throw missing('method');
  if (!isRecord(method)) throw invalid('method must be an object (type and its hyperparameters).', 'method');
  const type = method['type'];
  if (type !== undefined && !(FINE_TUNING_METHODS as readonly unknown[]).includes(type)) {
    throw invalid(`method.type must be one of ${FINE_TUNING_METHODS.join(', ')}.`, 'method.type');
  }
  const validation = fields['validation_file'];
  if (validation !== undefined && validation !== null && (typeof validation !== 'string' || validation === '')) {
    throw invalid('validation_file must be a file id.', 'validation_file');
  }
  const integrations = fields['integrations'];
  if (integrations !== undefined && integrations !== null) {
    if (!Array.isArray(integrations)) throw invalid('integrations must be an array.', 'integrations');
    if (integrations.length > MAX_INTEGRATIONS) throw invalid(`integrations holds at most ${MAX_INTEGRATIONS} items.`, 'integrations');
    for (const [index, item] of integrations.entries()) {
      const itemType = isRecord(item) ? item['type'] : undefined;
      if (typeof itemType !== 'string' || !isRecord((item as Record<string, unknown>)[itemType])) {
        throw invalid('Each integration has a type and an object named by that type.', `integrations[${index}]`);
      }
    }
  }
  const seed = fields['seed'];
  if (seed !== undefined && seed !== null && !Number.isInteger(seed)) throw invalid('seed must be an integer.', 'seed');
  validateMetadata(fields['metadata']);
}
