import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { GatewayState } from './gateway-state.ts';
import type { GuardrailCompiler } from './guardrail-compiler.ts';
import { hashSources, loadStateFromTexts, readStateSources, type SourceTexts, type StateSources } from './state-loader.ts';

// Hot reload. We watch the directories, not the files: a ConfigMap volume swaps a
// `..data` symlink, which a watch on the file itself never sees. fs.watch gives speed;
// the poll (content hash every interval) gives certainty on filesystems where fs.watch
// is silent. Only events that name a source (or a ConfigMap's `..` entries) trigger a read.
//
// A writer that replaces the file in place (`cat new > gateway.yaml`, an editor saving in
// two writes) is seen half-way: a change is loaded only once two reads `settleMs` apart
// agree on size, mtime and content hash. A document that still fails validation is
// reported (and never installed) by the caller.

export type ReloadOutcome =
  | { ok: true; state: GatewayState; warnings: string[] }
  | { ok: false; errors: string[]; warnings: string[] };

export interface StateWatcherOptions {
  sources: StateSources;
  env: Readonly<Record<string, string | undefined>>;
  /** The guardrail engine's checks of a loaded state (see state-loader.ts). */
  guardrailCompiler: GuardrailCompiler;
  /** Hash of the sources already loaded, so the first poll does not reload them. */
  initialHash: string;
  intervalMs?: number;
  /** How long the sources must stay unchanged before a change is loaded (ms, default 150). */
  settleMs?: number;
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

  const settleMs = options.settleMs ?? 150;

  const checkOnce = async (): Promise<void> => {
    let first = await snapshotSources(options.sources);
    // Mid-swap the file can be briefly absent; the next poll sees the new one.
    if (first === undefined || first.hash === lastHash || closed) return;
    for (let attempt = 0; ; attempt++) {
      await delay(settleMs);
      if (closed) return;
      const second = await snapshotSources(options.sources);
      if (second === undefined) return;
      if (second.fingerprint === first.fingerprint) break;
      // Still being written: wait again, a bounded number of times; the next poll resumes.
      if (attempt >= 4) return;
      first = second;
    }
    if (first.hash === lastHash) return;
    lastHash = first.hash;
    const result = loadStateFromTexts(first.texts, options.env, options.guardrailCompiler);
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
  const paths = options.sources.credentialsPath === undefined ? [options.sources.statePath] : [options.sources.statePath, options.sources.credentialsPath];
  const names = new Set(paths.map((path) => basename(path)));
  for (const dir of new Set(paths.map((path) => dirname(path)))) {
    try {
      const watcher = watch(dir, { persistent: false }, (_event, filename) => {
        if (touchesSources(filename, names)) void check();
      });
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

/**
 * Whether a change to `filename` in a watched directory may change the sources: a source's
 * own name (written in place, or renamed into place by an editor), a ConfigMap's `..data`
 * swap (any `..` entry), or a name the platform did not give. Another file there — a log
 * written next to the state file — is not read for: each of its writes would read and hash
 * the sources again (measured: ≈ 9% of a busy gateway's CPU, docs/performance.md).
 */
export function touchesSources(filename: string | Buffer | null, names: ReadonlySet<string>): boolean {
  if (filename === null) return true;
  const name = filename.toString();
  return names.has(name) || name.startsWith('..');
}

interface SourcesSnapshot {
  readonly texts: SourceTexts;
  readonly hash: string;
  /** Content hash plus each file's size and mtime: equal across two reads = the writer is done. */
  readonly fingerprint: string;
}

async function snapshotSources(sources: StateSources): Promise<SourcesSnapshot | undefined> {
  try {
    const paths = sources.credentialsPath === undefined ? [sources.statePath] : [sources.statePath, sources.credentialsPath];
    const before = await Promise.all(paths.map((path) => stat(path)));
    const texts = await readStateSources(sources);
    const after = await Promise.all(paths.map((path) => stat(path)));
    const stamp = (stats: typeof before): string => stats.map((s) => `${s.size}:${s.mtimeMs}`).join(',');
    // Changed while we read it: not a consistent snapshot.
    if (stamp(before) !== stamp(after)) return undefined;
    const hash = hashSources(texts);
    return { texts, hash, fingerprint: `${hash}|${stamp(after)}` };
  } catch {
    return undefined;
  }
}
