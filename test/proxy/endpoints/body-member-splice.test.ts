// The stream-usage member is spliced into the client's bytes instead of serialising the body again.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { withMember } from '../../../proxy/endpoints/inference-routes.ts';

const MEMBER = '"stream_options":{"include_usage":true}';

function spliced(text: string): string | undefined {
  return withMember(Buffer.from(text), MEMBER)?.toString('utf8');
}

describe('withMember', () => {
  test('the member goes last, before the closing brace; everything else byte for byte', () => {
    assert.equal(spliced('{"model":"m","stream":true}'), `{"model":"m","stream":true,${MEMBER}}`);
    assert.equal(spliced('{ "a" : "ünï 😀" }\r\n\t '), `{ "a" : "ünï 😀" ,${MEMBER}}\r\n\t `);
  });

  test('an empty object gets no comma', () => {
    assert.equal(spliced('{}'), `{${MEMBER}}`);
    assert.equal(spliced(' {  } '), ` {  ${MEMBER}} `);
  });

  test('the result parses to the body with the member', () => {
    const body = { model: 'm', messages: [{ role: 'user', content: 'x}"' }], stream: true };
    assert.deepEqual(JSON.parse(spliced(JSON.stringify(body)) as string), { ...body, stream_options: { include_usage: true } });
  });

  test('bytes that do not end an object are left to the serialiser', () => {
    assert.equal(spliced('[1,2]'), undefined);
    assert.equal(spliced('}'), undefined);
    assert.equal(spliced('   '), undefined);
    assert.equal(spliced(''), undefined);
  });
});
