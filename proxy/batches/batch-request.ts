import { bodyObject, invalid, requiredString, validateMetadata } from './request-validation.ts';

// POST /v1/batches body rules (spec: Endpoints → POST /batches).

export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings'] as const;
export const COMPLETION_WINDOWS = ['immediate', '24h'] as const;

/** GET /v1/batches: limit 1–100, default 20. */
export const BATCH_LIST_RULES = { defaultLimit: 20, maxLimit: 100 } as const;

export interface CreateBatchRequest {
  readonly inputFileId: string;
  readonly endpoint: (typeof BATCH_ENDPOINTS)[number];
  readonly completionWindow: (typeof COMPLETION_WINDOWS)[number];
  readonly metadata: Record<string, string> | null;
}

export function parseCreateBatch(body: unknown): CreateBatchRequest {
  const fields = bodyObject(body);
  const inputFileId = requiredString(fields, 'input_file_id');
  const endpoint = requiredString(fields, 'endpoint');
  if (!(BATCH_ENDPOINTS as readonly string[]).includes(endpoint)) {
    throw invalid(`endpoint must be one of ${BATCH_ENDPOINTS.join(', ')}.`, 'endpoint');
  }
  const completionWindow = requiredString(fields, 'completion_window');
  if (!(COMPLETION_WINDOWS as readonly string[]).includes(completionWindow)) {
    throw invalid(`completion_window must be one of ${COMPLETION_WINDOWS.join(', ')}.`, 'completion_window');
  }
  return {
    inputFileId,
    endpoint: endpoint as CreateBatchRequest['endpoint'],
    completionWindow: completionWindow as CreateBatchRequest['completionWindow'],
    metadata: validateMetadata(fields['metadata']),
  };
}
