import { createHash, createSign } from 'node:crypto';
import { GatewayError } from '../../errors.ts';

// A Google service account key (the JSON file the console hands out) and the RS256 JWT
// assertion of the OAuth 2.0 JWT-bearer grant (RFC 7523) signed with it.

export interface ServiceAccount {
  readonly clientEmail: string;
  readonly privateKey: string;
  readonly privateKeyId: string | undefined;
  readonly tokenUri: string;
  readonly projectId: string | undefined;
  /** Stable identity of this key (hash of email, key and token endpoint): the token cache key. */
  readonly cacheKey: string;
}

export const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';
const ASSERTION_LIFETIME_SECONDS = 3600;

/**
 * Validates a service account key given as an object or as its JSON text.
 * Error messages name fields only, never their values.
 */
export function parseServiceAccount(source: unknown): ServiceAccount {
  let value = source;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      throw invalid('is not valid JSON');
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid('must be an object');
  const record = value as Record<string, unknown>;
  const clientEmail = record['client_email'];
  const privateKey = record['private_key'];
  if (typeof clientEmail !== 'string' || clientEmail === '') throw invalid('needs client_email');
  if (typeof privateKey !== 'string' || !privateKey.includes('PRIVATE KEY')) throw invalid('needs private_key (a PEM key)');
  if (record['type'] !== undefined && record['type'] !== 'service_account') throw invalid('must have type "service_account"');
  const tokenUri = typeof record['token_uri'] === 'string' ? record['token_uri'] : DEFAULT_TOKEN_URI;
  if (!/^https?:\/\//.test(tokenUri)) throw invalid('token_uri must be an http(s) URL');
  const privateKeyId = typeof record['private_key_id'] === 'string' ? record['private_key_id'] : undefined;
  const projectId = typeof record['project_id'] === 'string' ? record['project_id'] : undefined;
  const cacheKey = createHash('sha256').update(`${clientEmail}\0${privateKey}\0${tokenUri}`).digest('base64url');
  return { clientEmail, privateKey, privateKeyId, tokenUri, projectId, cacheKey };
}

/** The signed JWT assertion that the token endpoint exchanges for an access token. */
export function signAssertion(account: ServiceAccount, nowSeconds: number, scope = CLOUD_PLATFORM_SCOPE): string {
  const header: Record<string, string> = { alg: 'RS256', typ: 'JWT' };
  if (account.privateKeyId !== undefined) header['kid'] = account.privateKeyId;
  const claims = {
    iss: account.clientEmail,
    scope,
    aud: account.tokenUri,
    iat: nowSeconds,
    exp: nowSeconds + ASSERTION_LIFETIME_SECONDS,
  };
  const signingInput = `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}`;
  let signature: string;
  try {
    signature = createSign('RSA-SHA256').update(signingInput).sign(account.privateKey, 'base64url');
  } catch (error) {
    // The cause is dropped on purpose: crypto errors can quote key material.
    void error;
    throw invalid('private_key could not sign (is it an RSA key in PEM form?)');
  }
  return `${signingInput}.${signature}`;
}

function base64url(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64url');
}

function invalid(problem: string): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_CONFIG', `cloudB_service_account_json ${problem}.`, {
    param: 'cloudB_service_account_json',
  });
}
