/**
 * `npm run bench -- --idle`: the CPU an idle service burns (production mode, no requests), read from
 * /proc over `seconds` once it has settled (after start, the outbox readers' polls back off to their
 * ceiling within a few seconds). On SQLite, and on PostgreSQL when PG_URL is set. Target ≤ 5 ms of
 * CPU per second.
 */
import { readFileSync } from 'node:fs';

/** CPU time (user + system) a process has used so far, in ms (Linux, clock ticks of 10 ms). */
export function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** How often a process's main thread has gone to sleep so far (waiting for a socket, a timer, a lock): its voluntary context switches. */
export function mainThreadSleeps(pid: number): number {
  return Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8'))?.[1] ?? NaN);
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
