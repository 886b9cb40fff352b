// Vertex AI translation, table-driven from test/fixtures/providers/vertex-ai/*.json, plus the
// service-account pieces: the JWT assertion and the shared access-token cache.
import assert from 'node:assert/strict';
import { generateKeyPairSync, verify } from 'node:crypto';
import { describe, test } from 'node:test';
import { GatewayError } from '../../../proxy/errors.ts';
import { parseServiceAccount, signAssertion, type ServiceAccount } from '../../../proxy/providers/vertex-ai/vertex-service-account.ts';
import { AccessTokenCache, type FetchedToken } from '../../../proxy/providers/vertex-ai/vertex-token-cache.ts';
import { runGoldenSuite } from './golden-runner.ts';

runGoldenSuite(new URL('../../fixtures/providers/vertex-ai/', import.meta.url), { title: 'vertex-ai golden fixtures' });

const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
const PEM = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

function account(email = 'svc@proj.iam.gserviceaccount.com'): ServiceAccount {
  return parseServiceAccount({
    type: 'service_account',
    project_id: 'proj',
    private_key_id: 'key-1',
    private_key: PEM,
    client_email: email,
    token_uri: 'http://127.0.0.1:1/token',
  });
}

function decode(segment: string | undefined): Record<string, unknown> {
  return JSON.parse(Buffer.from(segment ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

describe('vertex-ai service account', () => {
  test('the JWT assertion is RS256-signed with the key and carries the grant claims', () => {
    const jwt = signAssertion(account(), 1_700_000_000);
    const [header, claims, signature] = jwt.split('.');
    assert.deepEqual(decode(header), { alg: 'RS256', typ: 'JWT', kid: 'key-1' });
    assert.deepEqual(decode(claims), {
      iss: 'svc@proj.iam.gserviceaccount.com',
      scope: 'https://www.googleapis.com/auth/cloud-platform',
      aud: 'http://127.0.0.1:1/token',
      iat: 1_700_000_000,
      exp: 1_700_003_600,
    });
    assert.ok(verify('RSA-SHA256', Buffer.from(`${header}.${claims}`), publicKey, Buffer.from(signature ?? '', 'base64url')));
  });

  test('the key file may be given as JSON text; token_uri defaults to Google', () => {
    const parsed = parseServiceAccount(JSON.stringify({ private_key: PEM, client_email: 'a@b.c' }));
    assert.equal(parsed.tokenUri, 'https://oauth2.googleapis.com/token');
    assert.equal(parsed.projectId, undefined);
  });

  test('problems name the field, never a value', () => {
    for (const bad of [{ client_email: 'a@b.c' }, { private_key: PEM }, 'not json', { private_key: PEM, client_email: 'a@b.c', token_uri: 'file:///etc/passwd' }]) {
      assert.throws(
        () => parseServiceAccount(bad),
        (error: unknown) => error instanceof GatewayError && error.status === 400 && !error.message.includes('PRIVATE KEY'),
      );
    }
    const broken = parseServiceAccount({ private_key: '-----BEGIN PRIVATE KEY-----\nnot-a-key\n-----END PRIVATE KEY-----\n', client_email: 'a@b.c' });
    assert.throws(() => signAssertion(broken, 0), (error: unknown) => error instanceof GatewayError && !error.message.includes('not-a-key'));
  });
});

describe('vertex-ai access-token cache', () => {
  /** A token source that counts fetches; hold() keeps the next fetch open until release(). */
  function countingSource(lifetimeSeconds = 3600) {
    let count = 0;
    let gate: Promise<void> = Promise.resolve();
    let open: (() => void) | undefined;
    return {
      fetches: () => count,
      hold(): void {
        gate = new Promise<void>((resolve) => (open = resolve));
      },
      release: () => open?.(),
      fetchToken: async (_account: ServiceAccount, assertion: string): Promise<FetchedToken> => {
        assert.equal(assertion.split('.').length, 3);
        count++;
        await gate;
        return { accessToken: `token-${count}`, expiresInSeconds: lifetimeSeconds };
      },
    };
  }

  test('concurrent first requests share one fetch; later requests use the cached token', async () => {
    let now = 0;
    const source = countingSource();
    source.hold();
    const cache = new AccessTokenCache({ fetchToken: source.fetchToken, now: () => now });
    const pending = Array.from({ length: 50 }, () => cache.token(account()));
    source.release();
    const tokens = await Promise.all(pending);
    assert.ok(tokens.every((token) => token === 'token-1'));
    now += 30 * 60_000;
    assert.equal(await cache.token(account()), 'token-1');
    assert.equal(source.fetches(), 1);
  });

  test('refreshes shortly before expiry, serving the old token meanwhile; an expired token is never served', async () => {
    let now = 0;
    const source = countingSource(3600);
    const cache = new AccessTokenCache({ fetchToken: source.fetchToken, now: () => now });
    assert.equal(await cache.token(account()), 'token-1');
    now = 3600_000 - 4 * 60_000; // inside the 5-minute refresh margin
    assert.equal(await cache.token(account()), 'token-1', 'still valid: served while refreshing');
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(source.fetches(), 2);
    assert.equal(await cache.token(account()), 'token-2');
    now = 2 * 3600_000; // past every expiry: must wait for a fresh token
    assert.equal(await cache.token(account()), 'token-3');
  });

  test('each service account has its own token; failures are not cached', async () => {
    let fail = true;
    let count = 0;
    const cache = new AccessTokenCache({
      fetchToken: async (serviceAccount) => {
        count++;
        if (fail) throw new GatewayError('AIGW_ERR_UPSTREAM_UNREACHABLE', 'down');
        return { accessToken: `token-for-${serviceAccount.clientEmail}`, expiresInSeconds: 3600 };
      },
    });
    await assert.rejects(cache.token(account('a@x.iam')), GatewayError);
    fail = false;
    assert.equal(await cache.token(account('a@x.iam')), 'token-for-a@x.iam');
    assert.equal(await cache.token(account('b@x.iam')), 'token-for-b@x.iam');
    assert.equal(await cache.token(account('a@x.iam')), 'token-for-a@x.iam');
    assert.equal(count, 3);
  });

  test('keeps at most maxEntries service accounts', async () => {
    const cache = new AccessTokenCache({ maxEntries: 2, fetchToken: async () => ({ accessToken: 't', expiresInSeconds: 3600 }) });
    for (const email of ['a@x', 'b@x', 'c@x']) await cache.token(account(email));
    assert.equal(cache.size, 2);
  });
});
