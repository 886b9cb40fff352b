#!/usr/bin/env node
// aigateway CLI entry (commands in bin/commands.ts). The compile cache is switched on before
// anything else loads: later starts reuse the compiled, type-stripped modules instead of
// redoing that work (start-up matters for autoscaling and the startup probe). Where the cache
// directory cannot be written (a read-only root without /tmp), it is simply off.
import { enableCompileCache } from 'node:module';

enableCompileCache?.(process.env['AIGATEWAY_COMPILE_CACHE_DIR']);
const { runCli } = await import('./commands.ts');
await runCli(process.argv.slice(2));
