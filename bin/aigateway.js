#!/usr/bin/env node
// aigateway CLI entry (commands in bin/commands.ts). Plain JavaScript, so nothing is
// type-stripped before Node's compile cache is on: with a warm cache no TypeScript is
// stripped at all, and the stripper itself (≈ 18 MiB) is never loaded. Start-up and idle
// memory matter for autoscaling and the startup probe (docs/performance.md). Where the cache
// directory cannot be written (a read-only root without /tmp), it is simply off.
// The first lines parse and run on any Node with ES modules: an older Node gets one line
// saying which version is needed, not a SyntaxError about a missing export.
import { cpSync, existsSync, readdirSync } from 'node:fs';
import * as nodeModule from 'node:module';
import { join } from 'node:path';

const REQUIRED_NODE_MAJOR = 24;
if (Number(process.versions.node.split('.')[0]) < REQUIRED_NODE_MAJOR) {
  process.stderr.write(
    `aigateway: needs Node.js ${REQUIRED_NODE_MAJOR} or later; this is Node.js ${process.version} (${process.execPath}). ` +
      'In the repository, `npm start` and `npx aigateway` use the Node it installs.\n',
  );
  process.exit(1);
}

/** A start-up failure as one line (the stack only with AIGATEWAY_LOG_LEVEL=debug). */
function fail(error) {
  const detail = process.env['AIGATEWAY_LOG_LEVEL'] === 'debug' && error instanceof Error ? error.stack : error instanceof Error ? error.message : String(error);
  process.stderr.write(`aigateway: ${detail}\n`);
  process.exit(1);
}

const cacheDir = process.env['AIGATEWAY_COMPILE_CACHE_DIR'];
const seed = process.env['AIGATEWAY_COMPILE_CACHE_SEED'];
// The image carries a cache filled at build time (bin/warm-compile-cache.js), but Node only
// uses a directory it may write to, and the root filesystem is read-only: a container's
// first start copies the part for its command to the (empty or missing) cache directory —
// in the chart a memory-backed volume, where ~800 files take ≈ 15 ms.
if (seed !== undefined && cacheDir !== undefined && (!existsSync(cacheDir) || readdirSync(cacheDir).length === 0)) {
  try {
    cpSync(join(seed, process.argv[2] === 'operator' ? 'operator' : 'serve'), cacheDir, { recursive: true });
  } catch {
    // No seed for this command, or nowhere to copy it: compiled as it loads.
  }
}
// Worker threads (the SQLite log store) read the directory from the environment: the base
// directory, not getCompileCacheDir() (which adds Node's version/flags/uid level again).
const enabled = nodeModule.enableCompileCache?.(cacheDir);
if (enabled?.directory !== undefined) process.env['NODE_COMPILE_CACHE'] = enabled.directory;
// Installed from npm (under node_modules, where Node does not strip types) the package runs
// the type-stripped copy its prepack step built (bin/build-package.js).
const installed = import.meta.url.includes('/node_modules/');
// Modules configure themselves from the environment as they load (e.g. OTEL_* tracing): a
// bad value fails here, as one line.
const { runCli } = await import(installed ? '../dist/bin/commands.js' : './commands.ts').catch(fail);
await runCli(process.argv.slice(2));
