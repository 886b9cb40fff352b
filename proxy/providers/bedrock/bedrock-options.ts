import type { IncomingHttpHeaders } from 'node:http';
import { GatewayError } from '../../errors.ts';
import { headerValue } from '../../gateway-headers.ts';
import type { ResolveOptionsInput } from '../provider-adapter.ts';

// cloudC (AWS Bedrock) settings for one target. Credentials travel as one group (access
// key id + secret + optional session token), taken from the first source that has them:
// the config leaf (cloudC_* keys), the request's x-gateway-cloudC-* headers, then the saved
// provider's `options` (accessKeyId, secretAccessKey, sessionToken). The region is looked up
// in the same order and defaults to us-east-1 (the spec's key set needs no region).

export const BEDROCK_HEADER = {
  accessKeyId: 'x-gateway-cloudc-access-key-id',
  secretAccessKey: 'x-gateway-cloudc-secret-access-key',
  sessionToken: 'x-gateway-cloudc-session-token',
  region: 'x-gateway-cloudc-region',
} as const;

export const DEFAULT_BEDROCK_REGION = 'us-east-1';

export interface AwsCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string | undefined;
}

export interface BedrockOptions {
  readonly region: string;
  readonly credentials: AwsCredentials;
}

// The region is part of the host name: only a plain region name may get there.
const REGION = /^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$/;

export function resolveBedrockOptions(input: ResolveOptionsInput): { options: Record<string, unknown>; baseUrl: string } {
  const { node, saved, headers } = input;
  const savedOptions = saved?.options ?? {};
  const credentials =
    credentialsOf(node.cloudC_access_key_id, node.cloudC_secret_access_key, node.cloudC_session_token) ??
    credentialsOf(
      header(headers, BEDROCK_HEADER.accessKeyId),
      header(headers, BEDROCK_HEADER.secretAccessKey),
      header(headers, BEDROCK_HEADER.sessionToken),
    ) ??
    credentialsOf(savedOptions['accessKeyId'], savedOptions['secretAccessKey'], savedOptions['sessionToken']);
  if (credentials === undefined) {
    throw new GatewayError(
      'AIGW_ERR_MISSING_PROVIDER_KEY',
      'No credentials for provider "bedrock": set aws_access_key_id and aws_secret_access_key (cloudC_access_key_id, cloudC_secret_access_key) in the config, use a saved provider, or send the x-gateway-aws-access-key-id and x-gateway-aws-secret-access-key headers.',
      { param: BEDROCK_HEADER.accessKeyId },
    );
  }
  const region = firstString(node.cloudC_region, header(headers, BEDROCK_HEADER.region), savedOptions['region']) ?? DEFAULT_BEDROCK_REGION;
  if (!REGION.test(region)) {
    throw new GatewayError('AIGW_ERR_INVALID_CONFIG', 'aws_region (cloudC_region) must be an AWS region name such as us-east-1.', {
      param: BEDROCK_HEADER.region,
    });
  }
  const options: BedrockOptions = { region, credentials };
  return { options: { bedrock: options }, baseUrl: bedrockOrigin(region) };
}

export function bedrockOrigin(region: string): string {
  return `https://bedrock-runtime.${region}.amazonaws.com`;
}

/** Reads the options resolveBedrockOptions stored on a target. */
export function bedrockOptionsOf(options: Readonly<Record<string, unknown>>): BedrockOptions {
  const value = options['bedrock'];
  if (typeof value !== 'object' || value === null) {
    throw new GatewayError('AIGW_ERR_INTERNAL', 'bedrock target was resolved without its options.');
  }
  return value as BedrockOptions;
}

function credentialsOf(accessKeyId: unknown, secretAccessKey: unknown, sessionToken: unknown): AwsCredentials | undefined {
  if (typeof accessKeyId !== 'string' || accessKeyId === '' || typeof secretAccessKey !== 'string' || secretAccessKey === '') {
    return undefined;
  }
  return { accessKeyId, secretAccessKey, sessionToken: typeof sessionToken === 'string' && sessionToken !== '' ? sessionToken : undefined };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headerValue(headers[name]);
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function firstString(...values: unknown[]): string | undefined {
  for (const value of values) if (typeof value === 'string' && value !== '') return value;
  return undefined;
}
