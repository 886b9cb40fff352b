import { after, before } from 'node:test';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { rawExchange } from './raw-http.ts';

/**
 * Two servers with the same routes, for the direct writes' tests: `plain`, and `hooked` with an
 * onSend hook (as the exchange capture adds) that records each payload it sees in `hookSaw`.
 */
export interface DirectWriteServers {
  readonly plain: FastifyInstance;
  readonly hooked: FastifyInstance;
  readonly hookSaw: unknown[];
  close(): Promise<void>;
}

export async function startDirectWriteServers(route: (server: FastifyInstance) => void): Promise<DirectWriteServers> {
  const hookSaw: unknown[] = [];
  const plain = Fastify();
  route(plain);
  await plain.listen({ port: 0, host: '127.0.0.1' });
  const hooked = Fastify();
  hooked.addHook('onSend', async (_request, _reply, payload) => {
    hookSaw.push(payload);
    return payload;
  });
  route(hooked);
  await hooked.listen({ port: 0, host: '127.0.0.1' });
  return {
    plain,
    hooked,
    hookSaw,
    close: async () => {
      await plain.close();
      await hooked.close();
    },
  };
}

/** The servers of one test file: started before its tests, closed after them. */
export function useDirectWriteServers(route: (server: FastifyInstance) => void): DirectWriteServers {
  let servers: DirectWriteServers | undefined;
  before(async () => {
    servers = await startDirectWriteServers(route);
  });
  after(async () => servers?.close());
  const started = (): DirectWriteServers => {
    if (servers === undefined) throw new Error('the direct-write servers start in before()');
    return servers;
  };
  return {
    get plain() {
      return started().plain;
    },
    get hooked() {
      return started().hooked;
    },
    get hookSaw() {
      return started().hookSaw;
    },
    close: () => started().close(),
  };
}

/** Counts the reply's reply.send calls in `counter.sends` (the direct writes must make none). */
export function countSends(reply: FastifyReply, counter: { sends: number }): void {
  const send = reply.send.bind(reply);
  reply.send = ((payload: unknown) => {
    counter.sends++;
    return send(payload);
  }) as FastifyReply['send'];
}

export function portOf(server: FastifyInstance): number {
  const address = server.server.address();
  return typeof address === 'object' && address !== null ? address.port : 0;
}

/** The raw answer to one POST without a body, the Date line masked. */
export async function rawPost(server: FastifyInstance, path: string): Promise<string> {
  return (await rawExchange(portOf(server), `POST ${path} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n`)).raw;
}
