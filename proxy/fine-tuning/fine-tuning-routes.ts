import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Dispatcher } from 'undici';
import { callProvider, forwardingTarget, relayProviderAnswer, type ProviderCall } from '../batches/provider-forwarding.ts';
import { parseListQuery, type ListQueryRules } from '../batches/request-validation.ts';
import { CHECKPOINT_LIST_RULES, JOB_LIST_RULES, validateCreateFineTuningJob } from './fine-tuning-request.ts';

// /v1/fine_tuning/jobs: always the provider's (OpenAI-compatible hosts, Azure OpenAI).
// Bodies and queries are validated here; answers are relayed as the provider sent them.

export interface FineTuningRouteDeps {
  readonly dispatcher: Dispatcher;
}

const SCOPE = { gatewayScope: 'inference' } as const;
type IdParams = { Params: { id: string } };

export function registerFineTuningRoutes(app: FastifyInstance, deps: FineTuningRouteDeps): void {
  app.post('/v1/fine_tuning/jobs', { config: SCOPE }, (request, reply) => {
    validateCreateFineTuningJob(request.body);
    return forward(deps, request, reply, '/v1/fine_tuning/jobs', {
      method: 'POST',
      path: 'fine_tuning/jobs',
      body: request.rawBody,
      headers: { 'content-type': 'application/json' },
    });
  });

  app.get('/v1/fine_tuning/jobs', { config: SCOPE }, (request, reply) =>
    forward(deps, request, reply, '/v1/fine_tuning/jobs', { method: 'GET', path: 'fine_tuning/jobs', query: listSearch(request, JOB_LIST_RULES) }),
  );

  app.get<IdParams>('/v1/fine_tuning/jobs/:id', { config: SCOPE }, (request, reply) =>
    forward(deps, request, reply, '/v1/fine_tuning/jobs/{fine_tuning_job_id}', { method: 'GET', path: jobPath(request.params.id) }),
  );

  app.post<IdParams>('/v1/fine_tuning/jobs/:id/cancel', { config: SCOPE }, (request, reply) =>
    forward(deps, request, reply, '/v1/fine_tuning/jobs/{fine_tuning_job_id}/cancel', { method: 'POST', path: `${jobPath(request.params.id)}/cancel` }),
  );

  app.get<IdParams>('/v1/fine_tuning/jobs/:id/checkpoints', { config: SCOPE }, (request, reply) =>
    forward(deps, request, reply, '/v1/fine_tuning/jobs/{fine_tuning_job_id}/checkpoints', {
      method: 'GET',
      path: `${jobPath(request.params.id)}/checkpoints`,
      query: listSearch(request, CHECKPOINT_LIST_RULES),
    }),
  );
}

async function forward(deps: FineTuningRouteDeps, request: FastifyRequest, reply: FastifyReply, route: string, call: ProviderCall): Promise<FastifyReply> {
  const target = forwardingTarget(request, route);
  return relayProviderAnswer(reply, target, await callProvider(deps.dispatcher, target, call));
}

function jobPath(id: string): string {
  return `fine_tuning/jobs/${encodeURIComponent(id)}`;
}

/** The validated limit (with its default made explicit) and cursor. */
function listSearch(request: FastifyRequest, rules: ListQueryRules): URLSearchParams {
  const query = parseListQuery(request.query, rules);
  const search = new URLSearchParams({ limit: String(query.limit) });
  if (query.after !== undefined) search.set('after', query.after);
  return search;
}
