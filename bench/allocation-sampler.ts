/**
 * Loaded into a server by bench/allocations.ts (`node --import dist/bench/allocation-sampler.js …`): the first
 * SIGUSR2 starts V8's sampling heap profiler counting every allocation (objects a scavenge or a full GC collected
 * included, so it counts what was allocated, not what lived), the second writes the profile to
 * `$ALLOCATION_PROFILE` and stops. Never part of the service.
 */
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';

const session = new Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  void (async () => {
    if (!sampling) {
      sampling = true;
      await session.post('HeapProfiler.enable');
      await session.post('HeapProfiler.startSampling', { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
      process.stderr.write('allocation sampling started\n');
      return;
    }
    const { profile } = await session.post('HeapProfiler.stopSampling');
    writeFileSync(process.env.ALLOCATION_PROFILE ?? 'allocations.heapprofile', JSON.stringify(profile));
    process.stderr.write('allocation profile written\n');
  })();
});
