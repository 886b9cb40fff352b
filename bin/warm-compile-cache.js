// Fills a compile-cache seed for the image (Dockerfile): DIR/serve holds every module `serve`
// loads at start-up, DIR/operator those of `operator`. bin/aigateway.js copies the right one
// to the writable cache directory on a container's first start, so pods start from compiled,
// type-stripped code. Each command is warmed in its own process (one cache per directory).
//   node bin/warm-compile-cache.js /app/.compile-cache
import { execFileSync } from 'node:child_process';
import { constants, enableCompileCache, flushCompileCache } from 'node:module';
import { join } from 'node:path';

const ENTRY_MODULES = {
  // The log store's worker refuses to run outside a worker thread, after it was compiled.
  serve: ['./commands.ts', '../proxy/logs/sqlite-log-worker.ts'],
  operator: ['../operator/k8s/operator-cli.ts'],
};

const [target, command] = process.argv.slice(2);
if (target === undefined) throw new Error('usage: node bin/warm-compile-cache.js DIR');
if (command === undefined) {
  for (const name of Object.keys(ENTRY_MODULES)) {
    execFileSync(process.execPath, [import.meta.filename, target, name], { stdio: 'inherit' });
  }
} else {
  const { status, message } = enableCompileCache(join(target, command));
  if (status !== constants.compileCacheStatus.ENABLED) throw new Error(`compile cache: ${message ?? status}`);
  for (const specifier of ENTRY_MODULES[command]) await import(specifier).catch(() => undefined);
  flushCompileCache();
  process.stdout.write(`compile cache for ${command}: ${join(target, command)}\n`);
  process.exit(0);
}
