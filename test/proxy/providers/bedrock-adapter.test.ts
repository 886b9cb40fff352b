// Bedrock translation, table-driven from test/fixtures/providers/bedrock/*.json, plus the
// pieces the fixtures cannot pin down: SigV4 signatures (checked against AWS's published
// test vectors and the mock's independent verifier) and event-stream framing errors.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConverseStreamTranslator } from '../../../proxy/providers/bedrock/bedrock-converse-stream.ts';
import { EventStreamDecoder } from '../../../proxy/providers/bedrock/bedrock-event-stream.ts';
import { signBedrockRequest } from '../../../proxy/providers/bedrock/bedrock-signing.ts';
import { converseEvent, encodeEventStreamMessage } from '../../fixtures/mock-bedrock-event-stream.ts';
import { verifySigV4, type SigV4Failure } from '../../fixtures/mock-bedrock-sigv4.ts';
import { parseSseData, runGoldenSuite, runStreamTranslator, splitBytes } from './golden-runner.ts';
import { EventStreamFramingError } from '../../../proxy/errors.ts';

runGoldenSuite(new URL('../../fixtures/providers/bedrock/', import.meta.url), { title: 'bedrock golden fixtures' });

describe('the mock’s independent SigV4 verifier matches AWS’s published test vectors', () => {
  const credentials = { AKIDEXAMPLE: { secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' } };
  const expected = { region: 'us-east-1', service: 'service', now: new Date('2015-08-30T12:36:00Z') };
  const lookup = (id: string) => credentials[id as keyof typeof credentials];
  const vector = (method: string, signature: string) => ({
    method,
    rawPath: '/',
    headers: {
      host: 'example.amazonaws.com',
      'x-amz-date': '20150830T123600Z',
      authorization: `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=${signature}`,
    },
    body: Buffer.alloc(0),
  });

  test('get-vanilla and post-vanilla verify; a changed signature does not', () => {
    assert.equal(verifySigV4(vector('GET', '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31'), lookup, expected), undefined);
    assert.equal(verifySigV4(vector('POST', '5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b'), lookup, expected), undefined);
    assert.equal(verifySigV4(vector('POST', '5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31'), lookup, expected)?.kind, 'mismatch');
  });
});

describe('bedrock SigV4 signing (the AWS SDK signer, verified independently)', () => {
  const credentials = { accessKeyId: 'AKIDTEST', secretAccessKey: 'secret/key+chars', sessionToken: undefined };
  const signingDate = new Date('2025-05-01T10:00:00Z');
  const url = 'http://127.0.0.1:4567/model/amazon.titan-embed-text-v2%3A0/invoke';
  const body = '{"inputText":"hello"}';

  async function signed(overrides: { sessionToken?: string } = {}): Promise<Record<string, string>> {
    return signBedrockRequest(
      { url, method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body },
      { ...credentials, ...overrides },
      'us-east-1',
      signingDate,
    );
  }

  function check(headers: Record<string, string>, change: { path?: string; body?: string; secret?: string; token?: string } = {}): SigV4Failure | undefined {
    return verifySigV4(
      { method: 'POST', rawPath: change.path ?? '/model/amazon.titan-embed-text-v2%3A0/invoke', headers, body: Buffer.from(change.body ?? body) },
      () => ({ secretAccessKey: change.secret ?? credentials.secretAccessKey, ...(change.token !== undefined ? { sessionToken: change.token } : {}) }),
      { region: 'us-east-1', service: 'bedrock', now: signingDate },
    );
  }

  test('a signed request verifies; the signed host is the one the request goes to, model id encoded twice in the canonical path', async () => {
    const headers = await signed();
    assert.equal(headers['host'], '127.0.0.1:4567');
    assert.equal(headers['x-amz-date'], '20250501T100000Z');
    assert.match(headers['authorization'] ?? '', /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/20250501\/us-east-1\/bedrock\/aws4_request, SignedHeaders=accept;content-type;host;x-amz-content-sha256;x-amz-date, Signature=[0-9a-f]{64}$/);
    assert.equal(check(headers), undefined);
  });

  test('a changed body, path or secret is a mismatch', async () => {
    const headers = await signed();
    assert.equal(check(headers, { body: '{"inputText":"hellO"}' })?.kind, 'mismatch');
    assert.equal(check(headers, { path: '/model/amazon.titan-embed-text-v2:0/invoke' })?.kind, 'mismatch');
    assert.equal(check(headers, { secret: 'another-secret' })?.kind, 'mismatch');
  });

  test('a session token is sent as x-amz-security-token and signed', async () => {
    const headers = await signed({ sessionToken: 'session-token-1' });
    assert.equal(headers['x-amz-security-token'], 'session-token-1');
    assert.match(headers['authorization'] ?? '', /SignedHeaders=[^,]*x-amz-security-token/);
    assert.equal(check(headers, { token: 'session-token-1' }), undefined);
    assert.equal(check(await signed(), { token: 'session-token-1' })?.kind, 'token');
  });
});

describe('bedrock event-stream decoding', () => {
  const messages = [
    converseEvent('messageStart', { role: 'assistant' }),
    converseEvent('contentBlockDelta', { contentBlockIndex: 0, delta: { text: 'héllo ✓' } }),
    encodeEventStreamMessage({ ':event-type': 'messageStop', ':message-type': 'event' }, Buffer.from('{"stopReason":"end_turn"}')),
  ];
  const all = Buffer.concat(messages);

  test('messages split anywhere, or several in one chunk, decode the same', () => {
    for (const pieces of [[all], splitBytes(all, 1), splitBytes(all, 5), splitBytes(all, 1000)]) {
      const decoder = new EventStreamDecoder();
      const decoded = pieces.flatMap((piece) => decoder.push(piece));
      assert.deepEqual(
        decoded.map((message) => message.headers[':event-type']),
        ['messageStart', 'contentBlockDelta', 'messageStop'],
      );
      assert.match(decoded[1]?.payload.toString('utf8') ?? '', /"text":"héllo ✓"/);
      assert.equal(decoder.pendingBytes, 0);
    }
  });

  test('a corrupt payload fails the message CRC; a corrupt length fails the prelude CRC at once', () => {
    const payloadFlip = Buffer.from(all);
    flip(payloadFlip, (messages[0]?.length ?? 0) + 40, 0xff);
    const decoder = new EventStreamDecoder();
    assert.throws(() => decoder.push(payloadFlip), EventStreamFramingError);

    const lengthFlip = Buffer.from(all);
    flip(lengthFlip, 1, 0x10); // claims ~1 MiB more: must not wait for it
    assert.throws(() => new EventStreamDecoder().push(lengthFlip.subarray(0, 12)), /prelude checksum/);
  });

  test('the stream transform reports corrupt and truncated streams as an error event, without [DONE]', async () => {
    const corrupt = Buffer.from(all);
    flip(corrupt, corrupt.length - 1, 0x01);
    const corruptOut = parseSseData(runStreamTranslator(new ConverseStreamTranslator({ model: 'm' }), [corrupt]));
    const failure = corruptOut.at(-1) as { error: { message: string; code: string; provider: string } };
    assert.match(failure.error.message, /checksum/);
    assert.equal(failure.error.code, 'invalid_event_stream');
    assert.equal(failure.error.provider, 'bedrock');
    assert.ok(!corruptOut.includes('[DONE]'));

    const truncated = parseSseData(runStreamTranslator(new ConverseStreamTranslator({ model: 'm' }), [all.subarray(0, all.length - 3)]));
    assert.match((truncated.at(-1) as { error: { message: string } }).error.message, /ended inside an event-stream message/);
    assert.ok(!truncated.includes('[DONE]'));
  });
});

function flip(buffer: Buffer, index: number, mask: number): void {
  buffer.writeUInt8(buffer.readUInt8(index) ^ mask, index);
}
