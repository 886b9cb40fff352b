import type { IncomingHttpHeaders } from 'node:http';
import type { RoutingConfig } from '../config/routing-config-schema.ts';
import { formatConfigIssues, parseRoutingConfig } from '../config/routing-config-validation.ts';
import type { GatewayState } from '../config/gateway-state.ts';
import { GatewayError, PlanCompileError } from '../errors.ts';
import { HEADER, headerValue } from '../gateway-headers.ts';
import { compileRoutingPlan, type PlanNode } from './routing-plan.ts';

// Which plan serves a request — the spec's four ways of naming a provider:
//   3. x-gateway-config (inline JSON or a saved config id) — wins over the others;
//   2. x-gateway-virtual-key;
//   1. x-gateway-provider (name or @slug) + Authorization: Bearer;
//   4. x-gateway-custom-host + x-gateway-provider (+ Authorization).
// Ways 1, 2 and 4 become a one-leaf config, so every request runs the same routing code.
// A config that names no provider itself (only retry, cache, …) takes the provider from
// the headers of ways 1, 2 or 4.

export interface RouteSelection {
  readonly plan: PlanNode;
  /** Id of the saved config, when one was named. */
  readonly configId: string | undefined;
}

const PROVIDER_KEYS = ['provider', 'virtual_key', 'strategy', 'targets'] as const;

// Clients resend the same inline config on every request: parse and compile it once.
const INLINE_CACHE_LIMIT = 512;
const inlineCache = new Map<string, RoutingConfig>();

export function selectRoute(headers: IncomingHttpHeaders, state: GatewayState): RouteSelection {
  const configHeader = headerValue(headers[HEADER.config])?.trim();
  if (configHeader === undefined || configHeader === '') {
    return { plan: compileInline(providerFromHeaders(headers) ?? throwMissingProvider()), configId: undefined };
  }
  if (!configHeader.startsWith('{')) return savedConfig(configHeader, state);
  const config = parseInline(configHeader);
  if (PROVIDER_KEYS.some((key) => config[key] !== undefined)) return { plan: compileCached(configHeader, config), configId: undefined };
  const fromHeaders = providerFromHeaders(headers) ?? throwMissingProvider();
  return { plan: compileInline({ ...fromHeaders, ...config }), configId: undefined };
}

function savedConfig(id: string, state: GatewayState): RouteSelection {
  const saved = state.configs.get(id);
  if (saved !== undefined) return { plan: saved.plan, configId: saved.id };
  const issues = state.invalidConfigs.get(id);
  if (issues !== undefined) {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `Saved config "${id}" is invalid: ${formatConfigIssues([...issues])}`, {
      param: HEADER.config,
    });
  }
  throw new GatewayError('AIGW_ERR_UNKNOWN_CONFIG', `No saved config with id "${id}".`, { param: HEADER.config });
}

function parseInline(value: string): RoutingConfig {
  const cached = inlineCache.get(value);
  if (cached !== undefined) return cached;
  let raw: unknown;
  try {
    raw = JSON.parse(value);
  } catch {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `${HEADER.config} is not valid JSON.`, { param: HEADER.config });
  }
  const parsed = parseRoutingConfig(raw);
  if (!parsed.success) {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `Invalid config in ${HEADER.config}: ${formatConfigIssues(parsed.issues)}`, {
      param: HEADER.config,
    });
  }
  return parsed.config;
}

const compiledCache = new Map<string, PlanNode>();

function compileCached(key: string, config: RoutingConfig): PlanNode {
  const cached = compiledCache.get(key);
  if (cached !== undefined) return cached;
  const plan = compileInline(config);
  if (compiledCache.size >= INLINE_CACHE_LIMIT) {
    const oldest = compiledCache.keys().next().value;
    if (oldest !== undefined) {
      compiledCache.delete(oldest);
      inlineCache.delete(oldest);
    }
  }
  compiledCache.set(key, plan);
  inlineCache.set(key, config);
  return plan;
}

function compileInline(config: RoutingConfig): PlanNode {
  try {
    return compileRoutingPlan(config, 'request');
  } catch (error) {
    if (!(error instanceof PlanCompileError)) throw error;
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', `Invalid config in ${HEADER.config}: ${formatConfigIssues(error.issues)}`, {
      param: HEADER.config,
    });
  }
}

function providerFromHeaders(headers: IncomingHttpHeaders): RoutingConfig | undefined {
  const virtualKey = headerValue(headers[HEADER.virtualKey]);
  if (virtualKey !== undefined && virtualKey !== '') {
    if (headerValue(headers[HEADER.customHost]) !== undefined) {
      throw new GatewayError(
        'AIGW_ERR_CREDENTIAL_HOST_CONFLICT',
        `${HEADER.customHost} cannot be used with ${HEADER.virtualKey}: a saved credential goes only to the host configured with it.`,
        { param: HEADER.customHost },
      );
    }
    return { virtual_key: virtualKey };
  }
  const provider = headerValue(headers[HEADER.provider]);
  if (provider === undefined || provider === '') {
    if (headerValue(headers[HEADER.customHost]) !== undefined) {
      throw new GatewayError('AIGW_ERR_MISSING_PROVIDER', `${HEADER.customHost} needs ${HEADER.provider} too.`, {
        param: HEADER.provider,
      });
    }
    return undefined;
  }
  const config: RoutingConfig = { provider };
  const token = bearerToken(headerValue(headers['authorization']));
  if (token !== undefined) config.api_key = token;
  const customHost = headerValue(headers[HEADER.customHost]);
  if (customHost !== undefined && customHost !== '') config.custom_host = customHost;
  return config;
}

function bearerToken(authorization: string | undefined): string | undefined {
  if (authorization === undefined) return undefined;
  const match = /^Bearer\s+(.+)$/i.exec(authorization.trim());
  return match?.[1];
}

function throwMissingProvider(): never {
  throw new GatewayError(
    'AIGW_ERR_MISSING_PROVIDER',
    `No provider identified: send ${HEADER.virtualKey}, or ${HEADER.provider} with Authorization, or ${HEADER.config}, or ${HEADER.customHost} with ${HEADER.provider}.`,
    { param: HEADER.virtualKey },
  );
}
