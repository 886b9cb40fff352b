import { watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { GatewayState } from './gateway-state.ts';
import { hashSources, loadStateFromTexts, readStateSources, type StateSources } from './state-loader.ts';

// Hot reload. We watch the directories, not the files: a ConfigMap volume swaps a
// `..data` symlink, which a watch on the file itself never sees. fs.watch gives speed;
// the poll (content hash every interval) gives certainty on filesystems where fs.watch
// is silent.

export type ReloadOutcome =
  | { ok: true; state: GatewayState; warnings: string[] }
  | { ok: false; errors: string[]; warnings: string[] };

export interface StateWatcherOptions {
  sources: StateSources;
  env: Readonly<Record<string, string | undefined>>;
  /** Hash of the sources already loaded, so the first poll does not reload them. */
  initialHash: string;
  intervalMs?: number;
  onReload: (outcome: ReloadOutcome) => void;
}

export interface StateWatcher {
  /** Reads the sources now and reloads if they changed. */
  check(): Promise<void>;
  close(): void;
}

export function watchStateSources(options: StateWatcherOptions): StateWatcher {
  let lastHash = options.initialHash;
  let running: Promise<void> | undefined;
  let again = false;
  let closed = false;

  const checkOnce = async (): Promise<void> => {
    let texts;
    try {
      texts = await readStateSources(options.sources);
    } catch {
      // Mid-swap the file can be briefly absent; the next poll sees the new one.
      return;
    }
    const hash = hashSources(texts);
    if (hash === lastHash || closed) return;
    lastHash = hash;
    const result = loadStateFromTexts(texts, options.env);
    options.onReload(result);
  };

  const check = (): Promise<void> => {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await checkOnce();
      } while (again && !closed);
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  const watchers: FSWatcher[] = [];
  const dirs = new Set([dirname(options.sources.statePath)]);
  if (options.sources.credentialsPath !== undefined) dirs.add(dirname(options.sources.credentialsPath));
  for (const dir of dirs) {
    try {
      const watcher = watch(dir, { persistent: false }, () => void check());
      watcher.on('error', () => watcher.close());
      watchers.push(watcher);
    } catch {
      // Polling still covers this directory.
    }
  }
  const timer = setInterval(() => void check(), options.intervalMs ?? 1000);
  timer.unref();

  return {
    check,
    close() {
      closed = true;
      clearInterval(timer);
      for (const watcher of watchers) watcher.close();
    },
  };
}
