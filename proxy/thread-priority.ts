import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

// Threads that should yield to the serving thread where they share a core with it: the SQLite
// log worker (its commits) and V8's helper threads. On Linux, setpriority on a thread id moves
// that thread alone; elsewhere (no /proc), or when refused, a thread keeps its priority.

/** Sets thread `tid`'s nice value; false when refused (or the thread is gone). */
export function setThreadNice(tid: number, nice: number): boolean {
  try {
    setPriority(tid, nice);
    return true;
  } catch {
    return false;
  }
}

/** The calling thread's id (Linux), or undefined where /proc/thread-self does not exist. */
export function ownThreadId(): number | undefined {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').at(-1));
  } catch {
    return undefined;
  }
}

// V8's helper threads — concurrent marking and sweeping, parallel scavenges, background
// compilation; Node names them "V8Worker" — run at the serving thread's priority. Where they
// share a core with it (a pod held to one CPU, or a process pinned to one core), a full GC's
// concurrent marker of the gateway's ≈ 32 MB live heap gets 10–20 ms stretches in which no
// request is served: the 500 req/s p99 (docs/performance.md). At a lower priority they take
// the idle time between requests instead; with cores to spare they run there as before, and
// marking they fall behind on V8 finishes on the serving thread in its own bounded steps.

export const DEFAULT_HELPER_THREAD_NICE = 10;
const HELPER_THREAD_NAME = 'V8Worker';

/**
 * Lowers the priority of V8's helper threads to `niceness` (1–19; 0 leaves them alone) and
 * returns how many it changed. Never above the calling (serving) thread's own priority: a
 * process started at a higher nice value keeps its helpers there. Linux only.
 */
export function yieldHelperThreads(niceness: number = DEFAULT_HELPER_THREAD_NICE, taskDir = '/proc/self/task'): number {
  if (niceness === 0 || process.platform !== 'linux') return 0;
  const target = Math.max(niceness, getPriority());
  let threads: string[];
  try {
    threads = readdirSync(taskDir);
  } catch {
    return 0;
  }
  let changed = 0;
  for (const thread of threads) {
    let name: string;
    try {
      name = readFileSync(`${taskDir}/${thread}/comm`, 'utf8').trim();
    } catch {
      continue; // gone
    }
    if (name === HELPER_THREAD_NAME && setThreadNice(Number(thread), target)) changed++;
  }
  return changed;
}
