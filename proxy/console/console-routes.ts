import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { PUBLIC_ROUTE } from '../auth/route-access.ts';

// The web console (docs/console.md): a static page and its bundle, built at build time from
// console/src (npm run build:console) into console/dist, which is committed, shipped in the
// image and in the npm package. Served on the gateway's own port under /console when
// `serve --console` asks for it; off, nothing is registered. The files are public: they hold
// no secret. The page signs in with a gateway API key typed by the user and calls the
// gateway's public APIs with it; it uses relative URLs only, so it works behind a
// path-prefixed Ingress.

/** The console's routes, all public (the default-deny test lists exactly these). */
export const CONSOLE_ROUTES = ['/console', '/console/console.js', '/console/console.css', '/console/favicon.svg'] as const;

// Strict: nothing inline, nothing from elsewhere; the page talks only to its own origin.
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'permissions-policy': 'camera=(), microphone=(), geolocation=(), payment=()',
  // Revalidated each load: the file names carry no hash, and an upgrade must show at once.
  'cache-control': 'no-cache',
};

interface Asset {
  readonly body: Buffer;
  readonly type: string;
}

/** Where the built console lives: console/dist in the repository and the image, beside dist/ in the npm package. */
export function consoleAssetsDir(): string | undefined {
  const candidates = [join(import.meta.dirname, '../../console/dist'), join(import.meta.dirname, '../../../console/dist')];
  return candidates.find((dir) => existsSync(join(dir, 'index.html')));
}

/** The console plugin; throws at start when the built files are missing (run `npm run build:console`). */
export function consolePlugin(options: { assetsDir?: string } = {}): FastifyPluginAsync {
  const dir = options.assetsDir ?? consoleAssetsDir();
  if (dir === undefined) throw new Error('the console is not built: console/dist/index.html is missing (npm run build:console)');
  // Read once: four small files, served from memory.
  const load = (name: string, type: string): Asset => ({ body: readFileSync(join(dir, name)), type });
  const page = load('index.html', 'text/html; charset=utf-8');
  const assets: ReadonlyArray<[string, Asset]> = [
    ['/console/console.js', load('console.js', 'text/javascript; charset=utf-8')],
    ['/console/console.css', load('console.css', 'text/css; charset=utf-8')],
    ['/console/favicon.svg', load('favicon.svg', 'image/svg+xml')],
  ];
  const send = (reply: FastifyReply, asset: Asset): FastifyReply => reply.headers(SECURITY_HEADERS).header('content-type', asset.type).send(asset.body);
  return async (app) => {
    app.get('/console', PUBLIC_ROUTE, async (request, reply) => {
      // The page's relative URLs need the trailing slash; a relative redirect keeps an Ingress's prefix.
      const path = request.url.split('?')[0] ?? '';
      if (!path.endsWith('/')) return reply.headers(SECURITY_HEADERS).redirect('console/', 302);
      return send(reply, page);
    });
    for (const [url, asset] of assets) app.get(url, PUBLIC_ROUTE, async (_request, reply) => send(reply, asset));
  };
}
