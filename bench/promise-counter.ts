/**
 * Loaded into a server by bench/promises.ts (`node --import dist/bench/promise-counter.js …`): counts the promises the
 * process creates (an async hook's `init`; the hook itself is on for the whole run, so the count is not a cost
 * figure) and writes the count so far to stderr at each SIGUSR2. Never part of the service.
 */
import { createHook } from 'node:async_hooks';
import { writeSync } from 'node:fs';

let promises = 0;
createHook({
  init(_id, type) {
    if (type === 'PROMISE') promises++;
  },
}).enable();
process.on('SIGUSR2', () => writeSync(2, `promises so far: ${promises}\n`));
