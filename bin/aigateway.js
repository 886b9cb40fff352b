#!/usr/bin/env node
// aigateway CLI entry (commands in bin/commands.ts). Plain JavaScript, so nothing is
// type-stripped before Node's compile cache is on: with a warm cache no TypeScript is
// stripped at all, and the stripper itself (≈ 18 MiB) is never loaded. Start-up and idle
// memory matter for autoscaling and the startup probe (docs/performance.md). Where the cache
// directory cannot be written (a read-only root without /tmp), it is simply off.
import { cpSync, existsSync } from 'node:fs';
import { enableCompileCache, getCompileCacheDir } from 'node:module';
import { join } from 'node:path';

const cacheDir = process.env['AIGATEWAY_COMPILE_CACHE_DIR'];
const seed = process.env['AIGATEWAY_COMPILE_CACHE_SEED'];
// The image carries a cache filled at build time (bin/warm-compile-cache.js), but Node only
// uses a directory it may write to, and the root filesystem is read-only: a container's
// first start copies the part for its command to the cache directory (≈ 30 ms).
if (seed !== undefined && cacheDir !== undefined && !existsSync(cacheDir)) {
  try {
    cpSync(join(seed, process.argv[2] === 'operator' ? 'operator' : 'serve'), cacheDir, { recursive: true });
  } catch {
    // No seed for this command, or nowhere to copy it: compiled as it loads.
  }
}
enableCompileCache?.(cacheDir);
// Worker threads (the SQLite log store) read the directory from the environment.
const enabledDir = getCompileCacheDir?.();
if (enabledDir !== undefined) process.env['NODE_COMPILE_CACHE'] = enabledDir;
const { runCli } = await import('./commands.ts');
await runCli(process.argv.slice(2));
