/**
 * Loaded into a server by bench/allocations.ts (`node --import dist/bench/allocation-sampler.js …`): the first
 * SIGUSR2 starts V8's sampling heap profiler counting every allocation (objects a scavenge or a full GC collected
 * included, so it counts what was allocated, not what lived), the next writes the profile to `$ALLOCATION_PROFILE`
 * and stops, and so on. Never part of the service.
 */
import { Session } from 'node:inspector/promises';
import { renameSync, writeFileSync } from 'node:fs';

const session = new Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  sampling = !sampling;
  const step = sampling ? start() : stop();
  step.catch((error: unknown) => process.stderr.write(`allocation sampler: ${String(error)}\n`));
});

async function start(): Promise<void> {
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
  process.stderr.write('allocation sampling started\n');
}

async function stop(): Promise<void> {
  const { profile } = await session.post('HeapProfiler.stopSampling');
  // Written whole, then renamed: the tool reads the file as soon as it exists.
  const file = process.env.ALLOCATION_PROFILE ?? 'allocations.heapprofile';
  writeFileSync(`${file}.partial`, JSON.stringify(profile));
  renameSync(`${file}.partial`, file);
  process.stderr.write('allocation profile written\n');
}
