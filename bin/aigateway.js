#!/usr/bin/env node
// aigateway CLI entry (commands in bin/commands.ts). Plain JavaScript, so nothing is
// type-stripped before Node's compile cache is on: with a warm cache no TypeScript is
// stripped at all, and the stripper itself (≈ 18 MiB) is never loaded. Start-up and idle
// memory matter for autoscaling and the startup probe (docs/performance.md). Where the cache
// directory cannot be written (a read-only root without /tmp), it is simply off.
import { enableCompileCache, getCompileCacheDir } from 'node:module';

enableCompileCache?.(process.env['AIGATEWAY_COMPILE_CACHE_DIR']);
// Worker threads (the SQLite log store) read the directory from the environment.
const cacheDir = getCompileCacheDir?.();
if (cacheDir !== undefined) process.env['NODE_COMPILE_CACHE'] = cacheDir;
const { runCli } = await import('./commands.ts');
await runCli(process.argv.slice(2));
