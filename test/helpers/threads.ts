import { readdirSync, readFileSync } from 'node:fs';

/** Each thread of `pid` (Linux): its id, name and nice value (/proc/<pid>/task/<tid>/stat, field 19). */
export function threadsOf(pid: number): Array<{ tid: number; name: string; nice: number }> {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { tid: Number(tid), name: readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(), nice: Number(fields[16]) };
  });
}
