import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

// CPU time and memory of a target process, read from /proc (Linux). CPU time covers all
// of the process's threads (JS, libuv pool, GC helpers), which is what a core costs.

let clockTicksPerSecond: number | undefined;

function clockTicks(): number {
  if (clockTicksPerSecond === undefined) {
    try {
      clockTicksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicksPerSecond = 100;
    }
  }
  return clockTicksPerSecond;
}

/** User + system CPU seconds the process has used so far. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / clockTicks();
}

/** Resident set size in MiB (VmRSS). */
export function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return match?.[1] === undefined ? Number.NaN : Number(match[1]) / 1024;
}

export function procAvailable(): boolean {
  try {
    readFileSync(`/proc/${process.pid}/stat`, 'utf8');
    return true;
  } catch {
    return false;
  }
}

/** Busy (non-idle, non-iowait) seconds of one core since boot, from /proc/stat. */
export function coreBusySeconds(core: number): number {
  const line = readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((row) => row.startsWith(`cpu${core} `));
  if (line === undefined) return Number.NaN;
  // user nice system idle iowait irq softirq steal …
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  return (user + nice + system + irq + softirq + steal) / clockTicks();
}

/** Waits until the process is (nearly) idle — e.g. a backlog from the last run is done — or `timeoutMs` passes. */
export async function waitUntilIdle(pid: number, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let before = cpuSeconds(pid);
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = cpuSeconds(pid);
    if (now - before <= 0.02) return; // ≤ 20% of a core over 100 ms
    before = now;
  }
}
