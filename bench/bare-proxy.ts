import Fastify from 'fastify';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';

// The floor for a Node gateway: Fastify in, undici out, bytes passed through untouched
// (no JSON parse, no auth, no logging, no metrics). Anything aigateway costs above this
// is the price of its features.
//   node bench/bare-proxy.ts --port 8080 --upstream http://127.0.0.1:9000

const { values } = parseArgs({ options: { port: { type: 'string', default: '0' }, upstream: { type: 'string' } } });
if (values.upstream === undefined) throw new Error('bare-proxy needs --upstream <origin>');

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade']);
const upstream = new Pool(values.upstream, { connections: 512, keepAliveTimeout: 30_000 });
const app = Fastify({ logger: false, keepAliveTimeout: 72_000 });

app.removeAllContentTypeParsers();
app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

app.get('/', async () => 'bare proxy ok');
app.post('/*', async (request, reply) => {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (typeof value === 'string' && !HOP_BY_HOP.has(name) && name !== 'host') headers[name] = value;
  }
  const answer = await upstream.request({ path: request.url, method: 'POST', headers, body: request.body as Buffer });
  reply.code(answer.statusCode);
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) reply.header(name, value);
  }
  return reply.send(answer.body);
});

await app.listen({ port: Number(values.port), host: '127.0.0.1' });
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
