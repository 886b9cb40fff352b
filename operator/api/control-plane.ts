import type { FastifyPluginAsync } from 'fastify';
import type { ControlPlaneHost } from '../../proxy/start-gateway.ts';
import { policyRoutes } from './policy-routes.ts';
import { promptRoutes } from './prompt-routes.ts';
import { usageLimitRoutes } from './usage-limit-routes.ts';

// The control-plane API (DESIGN.md §4): rate-limit policies and prompt rendering. In
// standalone mode it is mounted in-process on the gateway's server, reading the live state
// snapshot and the local policy store; the operator serves the same routes in a cluster.

export function controlPlaneRoutes(host: ControlPlaneHost): FastifyPluginAsync {
  return async (app) => {
    await app.register(
      policyRoutes({ store: host.policyStore, statePolicies: () => host.currentState().document.rateLimitPolicies }),
    );
    const usageLimits = host.usageLimitStore;
    if (usageLimits !== undefined) {
      await app.register(usageLimitRoutes({ store: usageLimits, statePolicies: () => host.currentState().document.usageLimitPolicies }));
    }
    await app.register(promptRoutes({ getPrompt: (id) => host.currentState().prompts.get(id) }));
  };
}
