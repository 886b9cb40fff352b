import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { callProvider, forwardingTarget, relayProviderAnswer } from '../batches/provider-forwarding.ts';
import { GatewayError } from '../errors.ts';
import { applyForwardedPolicies, meterForwardedAnswer, type ForwardedPolicyDeps } from './forwarded-policies.ts';

// The rest of the OpenAI API, forwarded to the one OpenAI-compatible provider (or Azure
// OpenAI) a request names: moderations, images, audio, responses retrieve/delete/cancel/
// input_items, fine-tuning job events, assistants, vector stores… — every operation of
// OpenAI's OpenAPI description (shared/reference/openai-openapi) that the gateway does not
// serve itself. Organisation and project admin operations are left out: they take admin
// keys, not the project keys a gateway forwards.
//
// The same forwarding as batches and files (provider-forwarding.ts → guardedCall): egress
// policy, no redirects, credentials redacted, allow-listed response headers, errors in the
// OpenAI shape; logs and metrics as for every /v1 route. JSON bodies go as the client sent
// them; multipart, audio and any other body stream through without being held whole
// (capped); answers (audio, images, files) stream back. Validation is the provider's.

/** [method, path below /v1] from OpenAI's OpenAPI description, minus what is served elsewhere. */
export const FORWARDED_OPERATIONS: ReadonlyArray<readonly ['GET' | 'POST' | 'DELETE', string]> = [
  ['GET', '/assistants'],
  ['POST', '/assistants'],
  ['GET', '/assistants/{assistant_id}'],
  ['POST', '/assistants/{assistant_id}'],
  ['DELETE', '/assistants/{assistant_id}'],
  ['POST', '/audio/speech'],
  ['POST', '/audio/transcriptions'],
  ['POST', '/audio/translations'],
  ['GET', '/audio/voice_consents'],
  ['POST', '/audio/voice_consents'],
  ['GET', '/audio/voice_consents/{consent_id}'],
  ['POST', '/audio/voice_consents/{consent_id}'],
  ['DELETE', '/audio/voice_consents/{consent_id}'],
  ['POST', '/audio/voices'],
  ['GET', '/chat/completions'],
  ['GET', '/chat/completions/{completion_id}'],
  ['POST', '/chat/completions/{completion_id}'],
  ['DELETE', '/chat/completions/{completion_id}'],
  ['GET', '/chat/completions/{completion_id}/messages'],
  ['GET', '/containers'],
  ['POST', '/containers'],
  ['GET', '/containers/{container_id}'],
  ['DELETE', '/containers/{container_id}'],
  ['GET', '/containers/{container_id}/files'],
  ['POST', '/containers/{container_id}/files'],
  ['GET', '/containers/{container_id}/files/{file_id}'],
  ['DELETE', '/containers/{container_id}/files/{file_id}'],
  ['GET', '/containers/{container_id}/files/{file_id}/content'],
  ['GET', '/conversations/{conversation_id}/items'],
  ['POST', '/conversations/{conversation_id}/items'],
  ['GET', '/conversations/{conversation_id}/items/{item_id}'],
  ['DELETE', '/conversations/{conversation_id}/items/{item_id}'],
  ['GET', '/evals'],
  ['POST', '/evals'],
  ['GET', '/evals/{eval_id}'],
  ['POST', '/evals/{eval_id}'],
  ['DELETE', '/evals/{eval_id}'],
  ['GET', '/evals/{eval_id}/runs'],
  ['POST', '/evals/{eval_id}/runs'],
  ['GET', '/evals/{eval_id}/runs/{run_id}'],
  ['POST', '/evals/{eval_id}/runs/{run_id}'],
  ['DELETE', '/evals/{eval_id}/runs/{run_id}'],
  ['GET', '/evals/{eval_id}/runs/{run_id}/output_items'],
  ['GET', '/evals/{eval_id}/runs/{run_id}/output_items/{output_item_id}'],
  ['POST', '/fine_tuning/alpha/graders/run'],
  ['POST', '/fine_tuning/alpha/graders/validate'],
  ['GET', '/fine_tuning/checkpoints/{fine_tuned_model_checkpoint}/permissions'],
  ['POST', '/fine_tuning/checkpoints/{fine_tuned_model_checkpoint}/permissions'],
  ['DELETE', '/fine_tuning/checkpoints/{fine_tuned_model_checkpoint}/permissions/{permission_id}'],
  ['GET', '/fine_tuning/jobs/{fine_tuning_job_id}/events'],
  ['POST', '/fine_tuning/jobs/{fine_tuning_job_id}/pause'],
  ['POST', '/fine_tuning/jobs/{fine_tuning_job_id}/resume'],
  ['POST', '/images/edits'],
  ['POST', '/images/generations'],
  ['POST', '/images/variations'],
  ['DELETE', '/models/{model}'],
  ['POST', '/moderations'],
  ['POST', '/realtime/calls'],
  ['POST', '/realtime/calls/{call_id}/accept'],
  ['POST', '/realtime/calls/{call_id}/hangup'],
  ['POST', '/realtime/calls/{call_id}/refer'],
  ['POST', '/realtime/calls/{call_id}/reject'],
  ['POST', '/realtime/client_secrets'],
  ['POST', '/realtime/sessions'],
  ['POST', '/realtime/transcription_sessions'],
  ['POST', '/realtime/translations/client_secrets'],
  ['GET', '/responses/{response_id}'],
  ['DELETE', '/responses/{response_id}'],
  ['POST', '/responses/{response_id}/cancel'],
  ['GET', '/responses/{response_id}/input_items'],
  ['POST', '/threads'],
  ['POST', '/threads/runs'],
  ['GET', '/threads/{thread_id}'],
  ['POST', '/threads/{thread_id}'],
  ['DELETE', '/threads/{thread_id}'],
  ['GET', '/threads/{thread_id}/messages'],
  ['POST', '/threads/{thread_id}/messages'],
  ['GET', '/threads/{thread_id}/messages/{message_id}'],
  ['POST', '/threads/{thread_id}/messages/{message_id}'],
  ['DELETE', '/threads/{thread_id}/messages/{message_id}'],
  ['GET', '/threads/{thread_id}/runs'],
  ['POST', '/threads/{thread_id}/runs'],
  ['GET', '/threads/{thread_id}/runs/{run_id}'],
  ['POST', '/threads/{thread_id}/runs/{run_id}'],
  ['POST', '/threads/{thread_id}/runs/{run_id}/cancel'],
  ['GET', '/threads/{thread_id}/runs/{run_id}/steps'],
  ['GET', '/threads/{thread_id}/runs/{run_id}/steps/{step_id}'],
  ['POST', '/threads/{thread_id}/runs/{run_id}/submit_tool_outputs'],
  ['POST', '/uploads'],
  ['POST', '/uploads/{upload_id}/cancel'],
  ['POST', '/uploads/{upload_id}/complete'],
  ['POST', '/uploads/{upload_id}/parts'],
  ['GET', '/vector_stores'],
  ['POST', '/vector_stores'],
  ['GET', '/vector_stores/{vector_store_id}'],
  ['POST', '/vector_stores/{vector_store_id}'],
  ['DELETE', '/vector_stores/{vector_store_id}'],
  ['POST', '/vector_stores/{vector_store_id}/file_batches'],
  ['GET', '/vector_stores/{vector_store_id}/file_batches/{batch_id}'],
  ['POST', '/vector_stores/{vector_store_id}/file_batches/{batch_id}/cancel'],
  ['GET', '/vector_stores/{vector_store_id}/file_batches/{batch_id}/files'],
  ['GET', '/vector_stores/{vector_store_id}/files'],
  ['POST', '/vector_stores/{vector_store_id}/files'],
  ['GET', '/vector_stores/{vector_store_id}/files/{file_id}'],
  ['POST', '/vector_stores/{vector_store_id}/files/{file_id}'],
  ['DELETE', '/vector_stores/{vector_store_id}/files/{file_id}'],
  ['GET', '/vector_stores/{vector_store_id}/files/{file_id}/content'],
  ['POST', '/vector_stores/{vector_store_id}/search'],
  ['POST', '/conversations'],
  ['GET', '/conversations/{conversation_id}'],
  ['POST', '/conversations/{conversation_id}'],
  ['DELETE', '/conversations/{conversation_id}'],
  ['POST', '/content_provenance_checks'],
  ['GET', '/videos'],
  ['POST', '/videos'],
  ['POST', '/videos/characters'],
  ['GET', '/videos/characters/{character_id}'],
  ['POST', '/videos/edits'],
  ['POST', '/videos/extensions'],
  ['GET', '/videos/{video_id}'],
  ['DELETE', '/videos/{video_id}'],
  ['GET', '/videos/{video_id}/content'],
  ['POST', '/videos/{video_id}/remix'],
  ['POST', '/responses/input_tokens'],
  ['POST', '/responses/compact'],
  ['GET', '/skills'],
  ['POST', '/skills'],
  ['GET', '/skills/{skill_id}'],
  ['POST', '/skills/{skill_id}'],
  ['DELETE', '/skills/{skill_id}'],
  ['GET', '/skills/{skill_id}/content'],
  ['GET', '/skills/{skill_id}/versions'],
  ['POST', '/skills/{skill_id}/versions'],
  ['GET', '/skills/{skill_id}/versions/{version}'],
  ['DELETE', '/skills/{skill_id}/versions/{version}'],
  ['GET', '/skills/{skill_id}/versions/{version}/content'],
  ['POST', '/chatkit/sessions/{session_id}/cancel'],
  ['POST', '/chatkit/sessions'],
  ['GET', '/chatkit/threads/{thread_id}/items'],
  ['GET', '/chatkit/threads/{thread_id}'],
  ['DELETE', '/chatkit/threads/{thread_id}'],
  ['GET', '/chatkit/threads'],
];

/** Largest streamed (non-JSON) body forwarded; past it the upload is cut with a 413. */
export const MAX_FORWARDED_BODY_BYTES = 512 * 1024 * 1024;

export interface ForwardedRouteDeps extends Partial<ForwardedPolicyDeps> {
  readonly dispatcher: Dispatcher;
  /** Overrides MAX_FORWARDED_BODY_BYTES (tests). */
  readonly maxBodyBytes?: number;
}

const SCOPE = { gatewayScope: 'inference' } as const;

/** Registers every forwarded operation in an encapsulated context (its own body parser). */
export function registerForwardedRoutes(app: FastifyInstance, deps: ForwardedRouteDeps): void {
  void app.register(async (scope) => {
    // Anything but JSON (multipart, audio, application/sdp…) is left unread: the handler
    // streams it to the provider.
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    for (const [method, path] of FORWARDED_OPERATIONS) {
      const url = `/v1${path.replace(/\{([^}]+)\}/g, ':$1')}`;
      scope.route({ method, url, config: SCOPE, handler: (request, reply) => forward(deps, request, reply, method, path) });
    }
  });
}

async function forward(deps: ForwardedRouteDeps, request: FastifyRequest, reply: FastifyReply, method: 'GET' | 'POST' | 'DELETE', template: string): Promise<FastifyReply> {
  const route = `/v1${template}`;
  const target = forwardingTarget(request, route);
  const params = request.params as Record<string, string>;
  const path = template.slice(1).replace(/\{([^}]+)\}/g, (_match, name: string) => encodeURIComponent(params[name] ?? ''));
  const query = new URLSearchParams(request.url.split('?')[1] ?? '');
  const headers: Record<string, string> = {};
  const contentType = request.headers['content-type'];
  // Rate limits, guardrails and cost hold here as on inference (forwarded-policies.ts).
  const policies = deps.policies === undefined || deps.guardrails === undefined ? undefined : { policies: deps.policies, guardrails: deps.guardrails };
  const checked = policies === undefined ? { body: request.rawBody } : await applyForwardedPolicies(policies, request, reply, route);
  if (checked.denied !== undefined) return checked.denied;
  let body: Buffer | Readable | undefined;
  if (checked.body !== undefined) {
    body = checked.body;
    headers['content-type'] = 'application/json';
  } else if (method === 'POST' && contentType !== undefined) {
    headers['content-type'] = contentType;
    const length = request.headers['content-length'];
    if (typeof length === 'string' && /^\d+$/.test(length)) headers['content-length'] = length;
    body = request.raw.pipe(new ByteLimit(deps.maxBodyBytes ?? MAX_FORWARDED_BODY_BYTES));
  }
  const answer = await callProvider(deps.dispatcher, target, { method, path, query, body, headers });
  return relayProviderAnswer(reply, target, policies === undefined ? answer : meterForwardedAnswer(request, answer));
}

/** Passes bytes through and fails the stream once more than `limit` have passed. */
class ByteLimit extends Transform {
  readonly #limit: number;
  #seen = 0;

  constructor(limit: number) {
    super();
    this.#limit = limit;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.#seen += chunk.length;
    if (this.#seen > this.#limit) {
      callback(new GatewayError('AIGW_ERR_BODY_TOO_LARGE', `Request body is larger than ${this.#limit} bytes.`));
      return;
    }
    callback(null, chunk);
  }
}
