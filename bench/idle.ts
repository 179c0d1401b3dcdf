/**
 * `npm run bench -- --idle`: the CPU an idle service burns (production mode, no requests), read from
 * /proc over `seconds` once it has settled (after start, the outbox readers' polls back off to their
 * ceiling within a few seconds). On SQLite, and on PostgreSQL when PG_URL is set. Target ≤ 5 ms of
 * CPU per second.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU time (user + system) a process has used so far, in ms (Linux, clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** How often a process's main thread has gone to sleep so far (waiting for a socket, a timer, a lock): its voluntary context switches. */
export function mainThreadSleeps(pid: number): number {
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))?.[1] ?? NaN);
}

/** Each thread's name and user and system CPU so far, in ms (clock ticks of 10 ms), by thread id; a thread that exits while it is read is left out. */
export function threadsCpu(pid: number): Map<string, { name: string; user: number; system: number }> {
  const out = new Map<string, { name: string; user: number; system: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    out.set(tid, {
      name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
      user: Number(fields[11]) * 10,
      system: Number(fields[12]) * 10,
    });
  }
  return out;
}

/**
 * Where a process's CPU went between two `threadsCpu` readings, in ms: its main thread's user and system time, and
 * every other thread's (by "tid name"). A thread that ended between the readings is not counted: its CPU is lost.
 */
export function cpuSplit(pid: number, before: ReturnType<typeof threadsCpu>, after: ReturnType<typeof threadsCpu>) {
  const split = { mainUser: 0, mainSystem: 0, others: 0, byThread: new Map<string, number>() };
  for (const [tid, end] of after) {
    const begin = before.get(tid) ?? { user: 0, system: 0 };
    if (tid === String(pid)) {
      split.mainUser = end.user - begin.user;
      split.mainSystem = end.system - begin.system;
    } else {
      const spent = end.user - begin.user + end.system - begin.system;
      split.others += spent;
      if (spent > 0) split.byThread.set(`${tid} ${end.name}`, spent);
    }
  }
  return split;
}

export const IDLE_TARGET_MS_PER_S = 5;

/** Waits `settleSeconds`, then returns the process's CPU ms per second over `seconds`. */
export async function idleCpu(pid: number, settleSeconds: number, seconds: number): Promise<number> {
  await new Promise((r) => setTimeout(r, settleSeconds * 1000));
  const before = cpuMs(pid);
  const started = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  return (cpuMs(pid) - before) / ((performance.now() - started) / 1000);
}
