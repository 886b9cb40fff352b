// Builds the web console (docs/console.md): console/src → console/dist, which is committed
// and served by the gateway at /console (proxy/console/console-routes.ts). Nothing is
// fetched at run time: Preact, htm and uPlot are bundled here.
//   usage: npm run build:console   (CONSOLE_OUT=<dir> builds elsewhere; the bundle test compares)
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

const SRC = join(import.meta.dirname, 'src');
const DIST = process.env['CONSOLE_OUT'] ?? join(import.meta.dirname, 'dist');
mkdirSync(DIST, { recursive: true });

await build({
  entryPoints: { console: join(SRC, 'main.js') },
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  legalComments: 'eof',
  outdir: DIST,
  logLevel: 'warning',
});
await build({
  entryPoints: { console: join(SRC, 'console.css') },
  bundle: true,
  minify: true,
  outdir: DIST,
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) copyFileSync(join(SRC, file), join(DIST, file));
process.stdout.write(`${DIST}: built\n`);
