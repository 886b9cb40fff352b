// sendPlain against reply.send on the same reply state: the same bytes on the wire (status
// line, header order and case, length, body), and reply.send wherever a hook must see it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { sendPlain } from '../../../proxy/endpoints/plain-write.ts';
import { rawExchange } from '../../helpers/raw-http.ts';

const JSON_BYTES = Buffer.from('{"id":"x","choices":[{"message":{"content":"héllo"}}]}');

interface Case {
  readonly name: string;
  readonly status: number;
  readonly headers: Record<string, string | string[]>;
  readonly out: Buffer | string;
}

const CASES: Case[] = [
  { name: 'relayed JSON bytes', status: 200, headers: { 'x-gateway-trace-id': 't', 'content-type': 'application/json', 'x-request-id': 'r' }, out: JSON_BYTES },
  { name: 'a translated string', status: 200, headers: { 'content-type': 'application/json; charset=utf-8' }, out: '{"a":"é"}' },
  { name: 'a stated length that is right', status: 200, headers: { 'content-length': String(JSON_BYTES.length), 'content-type': 'application/json' }, out: JSON_BYTES },
  { name: 'a stated length that is wrong', status: 201, headers: { 'content-length': '3', 'content-type': 'application/json' }, out: JSON_BYTES },
  { name: 'no content-type (reply.send adds one)', status: 200, headers: { 'x-a': 'b' }, out: JSON_BYTES },
  { name: 'another content-type (reply.send decides)', status: 200, headers: { 'content-type': 'text/plain' }, out: 'plain' },
  { name: 'a string without charset (reply.send adds it)', status: 200, headers: { 'content-type': 'application/json' }, out: '{}' },
  { name: '204', status: 204, headers: { 'content-type': 'application/json' }, out: JSON_BYTES },
  { name: 'repeated values', status: 200, headers: { 'content-type': 'application/json', 'x-ratelimit-a': ['1', '2'] }, out: JSON_BYTES },
];

let app: FastifyInstance;
let hooked: FastifyInstance;
let hookSaw: unknown[] = [];
let sendCalls = 0;

function route(target: FastifyInstance): void {
  target.post('/:mode/:index', async (request, reply) => {
    const { mode, index } = request.params as { mode: string; index: string };
    const item = CASES[Number(index)] as Case;
    for (const [name, value] of Object.entries(item.headers)) reply.header(name, value);
    reply.code(item.status);
    if (mode === 'send') return reply.send(item.out);
    const send = reply.send.bind(reply);
    reply.send = ((payload: unknown) => {
      sendCalls++;
      return send(payload);
    }) as FastifyReply['send'];
    sendPlain(reply, item.out);
  });
}

before(async () => {
  app = Fastify();
  route(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  hooked = Fastify();
  hooked.addHook('onSend', async (_request, _reply, payload) => {
    hookSaw.push(payload);
    return payload;
  });
  route(hooked);
  await hooked.listen({ port: 0, host: '127.0.0.1' });
});

after(async () => {
  await app.close();
  await hooked.close();
});

/** The raw answer to one keep-alive request, the Date line masked. */
async function raw(server: FastifyInstance, path: string): Promise<string> {
  const address = server.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return (await rawExchange(port, `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n`)).raw;
}

describe('sendPlain', () => {
  for (const [index, item] of CASES.entries()) {
    test(`${item.name}: the same bytes as reply.send`, async () => {
      assert.equal(await raw(app, `/plain/${index}`), await raw(app, `/send/${index}`));
    });
  }

  test('the plain JSON answer does not go through reply.send; the others do', async () => {
    sendCalls = 0;
    await raw(app, '/plain/0');
    await raw(app, '/plain/1');
    await raw(app, '/plain/3');
    assert.equal(sendCalls, 0);
    await raw(app, '/plain/4');
    await raw(app, '/plain/5');
    await raw(app, '/plain/6');
    await raw(app, '/plain/7');
    assert.equal(sendCalls, 4);
  });

  test('an onSend hook (the exchange capture) still sees the answer', async () => {
    hookSaw = [];
    assert.equal(await raw(hooked, '/plain/0'), await raw(hooked, '/send/0'));
    assert.equal(hookSaw.length, 2);
    assert.deepEqual(hookSaw[0], JSON_BYTES);
  });
});
