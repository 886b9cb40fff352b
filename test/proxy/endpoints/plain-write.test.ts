// sendPlain against reply.send on the same reply state: the same bytes on the wire (status
// line, header order and case, length, body), and reply.send wherever a hook must see it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { sendPlain } from '../../../proxy/endpoints/plain-write.ts';
import { rawPost, countSends, useDirectWriteServers } from '../../helpers/direct-write-servers.ts';

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

const servers = useDirectWriteServers(route);
/** reply.send calls on the direct routes. */
const calls = { sends: 0 };

function route(target: FastifyInstance): void {
  target.post('/:mode/:index', async (request, reply) => {
    const { mode, index } = request.params as { mode: string; index: string };
    const item = CASES[Number(index)] as Case;
    for (const [name, value] of Object.entries(item.headers)) reply.header(name, value);
    reply.code(item.status);
    if (mode === 'send') return reply.send(item.out);
    countSends(reply, calls);
    sendPlain(reply, item.out);
  });
}

describe('sendPlain', () => {
  for (const [index, item] of CASES.entries()) {
    test(`${item.name}: the same bytes as reply.send`, async () => {
      assert.equal(await rawPost(servers.plain, `/plain/${index}`), await rawPost(servers.plain, `/send/${index}`));
    });
  }

  test('the plain JSON answer does not go through reply.send; the others do', async () => {
    calls.sends = 0;
    await rawPost(servers.plain, '/plain/0');
    await rawPost(servers.plain, '/plain/1');
    await rawPost(servers.plain, '/plain/3');
    assert.equal(calls.sends, 0);
    await rawPost(servers.plain, '/plain/4');
    await rawPost(servers.plain, '/plain/5');
    await rawPost(servers.plain, '/plain/6');
    await rawPost(servers.plain, '/plain/7');
    assert.equal(calls.sends, 4);
  });

  test('an onSend hook (the exchange capture) still sees the answer', async () => {
    servers.hookSaw.length = 0;
    assert.equal(await rawPost(servers.hooked, '/plain/0'), await rawPost(servers.hooked, '/send/0'));
    assert.equal(servers.hookSaw.length, 2);
    assert.deepEqual(servers.hookSaw[0], JSON_BYTES);
  });
});
