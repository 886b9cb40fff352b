// The gateway client: the official openai client, preconfigured with the gateway's headers,
// plus typed helpers for the gateway's own endpoints.
import OpenAI from 'openai';
import type { ClientOptions } from 'openai';
import { createHeaders, GatewayClientError, nullableHeaders, SAME_SETTING, type GatewayParams } from './headers.ts';
import { Logs, Policies, Prompts } from './resources.ts';

/** Where `npm start` serves the gateway. */
export const DEFAULT_BASE_URL = 'http://127.0.0.1:8787/v1';

const NO_PROVIDER_TOKEN = 'aigateway-no-provider-token';

// openai client options that keep their meaning behind the gateway.
const CLIENT_OPTION_NAMES = [
  'timeout',
  'maxRetries',
  'fetch',
  'fetchOptions',
  'defaultQuery',
  'logger',
  'logLevel',
  'dangerouslyAllowBrowser',
] as const satisfies ReadonlyArray<keyof ClientOptions>;

type PassedClientOptions = Pick<ClientOptions, (typeof CLIENT_OPTION_NAMES)[number]>;

export interface GatewayOptions extends GatewayParams, PassedClientOptions {
  /** The gateway's URL including `/v1`. Default: `GATEWAY_BASE_URL`, else `http://127.0.0.1:8787/v1`. */
  baseURL?: string | undefined;
  /**
   * More headers on every request, e.g. the values of the headers named in `forwardHeaders`.
   * They win over the gateway headers of the same name; `null` removes one.
   */
  defaultHeaders?: Record<string, string | null | undefined> | undefined;
}

/** The `{ headers }` request options of one call. */
export interface GatewayRequestOptions {
  headers: Record<string, string | null>;
}

/**
 * An OpenAI client that talks to the gateway.
 *
 * @example
 * const gateway = new Gateway({ provider: '@openai-prod', metadata: { _user: 'u-1' } }); // key from GATEWAY_API_KEY
 * const reply = await gateway.chat.completions.create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Hi' }] });
 */
export class Gateway extends OpenAI {
  /** The gateway API key (`apiKey`, else `GATEWAY_API_KEY`). The inherited `apiKey` field is the openai client's own: the provider token or a placeholder. */
  readonly gatewayApiKey: string;
  /** The gateway headers every request carries (Authorization, when given, included). */
  readonly gatewayHeaders: Readonly<Record<string, string>>;
  /** `POST /v1/prompts/{id}/render`. */
  readonly prompts: Prompts;
  /** `/v1/policies/rate-limits`. */
  readonly policies: Policies;
  /** `GET /v1/logs` (once the gateway's request-log store lands). */
  readonly logs: Logs;
  readonly #options: GatewayOptions;

  constructor(options: GatewayOptions = {}) {
    const prepared = prepare(options);
    super(prepared.clientOptions);
    this.#options = prepared.options;
    this.gatewayApiKey = prepared.apiKey;
    this.gatewayHeaders = Object.freeze(prepared.headers);
    this.prompts = new Prompts(this);
    this.policies = new Policies(this);
    this.logs = new Logs(this);
  }

  /**
   * A new client with some options replaced (each replaces the old value; `null` drops a
   * parameter), e.g. another trace id or metadata for a unit of work.
   *
   * @example
   * const job = gateway.withOptions({ traceId: `job-${id}`, metadata: { _user: user } });
   */
  override withOptions(options: GatewayOptions): this;
  /** @deprecated openai-only options (workloadIdentity, organization, …) have no meaning behind the gateway and are rejected. */
  override withOptions(options: Partial<ClientOptions>): this;
  override withOptions(options: GatewayOptions | Partial<ClientOptions>): this {
    const Client = this.constructor as new (options: GatewayOptions) => this;
    const merged: Record<string, unknown> = { ...this.#options, ...(options as GatewayOptions) };
    // A setting given under its other name (awsRegion / cloudCRegion…) replaces the old one.
    for (const name of Object.keys(options)) {
      const other = SAME_SETTING.get(name);
      if (other !== undefined && !(other.js in options)) delete merged[other.js];
    }
    return new Client(merged as GatewayOptions);
  }

  /**
   * Request options for one call: `gateway.chat.completions.create(body, gateway.requestOptions({ traceId }))`.
   * A parameter given as `null` removes the client's default for that call.
   */
  requestOptions(params: GatewayParams): GatewayRequestOptions {
    return requestOptions(params);
  }
}

/** `{ headers }` request options for one call of any openai client pointed at the gateway. */
export function requestOptions(params: GatewayParams): GatewayRequestOptions {
  return { headers: nullableHeaders(params) };
}

interface Prepared {
  apiKey: string;
  options: GatewayOptions;
  headers: Record<string, string>;
  clientOptions: ClientOptions;
}

function prepare(given: GatewayOptions): Prepared {
  const apiKey = nonEmpty(given.apiKey) ?? nonEmpty(readEnv('GATEWAY_API_KEY'));
  if (apiKey === undefined) {
    throw new GatewayClientError(
      'Missing gateway API key: pass apiKey to new Gateway({ apiKey }) or set the GATEWAY_API_KEY environment variable.',
    );
  }
  const options: GatewayOptions = { ...given, apiKey, baseURL: given.baseURL ?? readEnv('GATEWAY_BASE_URL') ?? DEFAULT_BASE_URL };
  const { baseURL, defaultHeaders, ...rest } = options;
  const params: Record<string, unknown> = {};
  const clientOptions: ClientOptions = {};
  for (const [name, value] of Object.entries(rest)) {
    if ((CLIENT_OPTION_NAMES as readonly string[]).includes(name)) Object.assign(clientOptions, { [name]: value });
    else params[name] = value;
  }
  // createHeaders checks every name and value, so a typo fails here rather than on the wire.
  const headers = createHeaders(params as GatewayParams);
  return {
    apiKey,
    options,
    headers,
    clientOptions: {
      ...clientOptions,
      baseURL,
      // The openai client wants a key: the provider token, or a placeholder that
      // defaultHeaders removes. Never the gateway key, which must not travel on to a provider.
      apiKey: headers['Authorization']?.replace(/^bearer\s+/i, '') ?? NO_PROVIDER_TOKEN,
      organization: null,
      project: null,
      defaultHeaders: mergeHeaders(
        // Without a provider token, Authorization is removed: a saved provider carries its own.
        { ...headers, Authorization: headers['Authorization'] ?? null },
        defaultHeaders ?? {},
      ),
    },
  };
}

/** Merges header records; names compare case-insensitively and the later record wins. */
function mergeHeaders(
  base: Record<string, string | null>,
  extra: Record<string, string | null | undefined>,
): Record<string, string | null> {
  const merged = { ...base };
  for (const [name, value] of Object.entries(extra)) {
    if (value === undefined) continue;
    for (const existing of Object.keys(merged)) if (existing.toLowerCase() === name.toLowerCase()) delete merged[existing];
    merged[name] = value;
  }
  return merged;
}

function readEnv(name: string): string | undefined {
  return typeof process === 'undefined' ? undefined : process.env[name];
}

function nonEmpty(value: string | null | undefined): string | undefined {
  return value === null || value === undefined || value === '' ? undefined : value;
}
