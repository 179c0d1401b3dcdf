/**
 * The memory store's counters count a charge without a promise (`penaltyNow`, src/rate-limit/store.ts), reading
 * rate-limiter-flexible's own storage as its `penalty` does. This holds that it is there (an upgrade of the library
 * that loses it would only be slower, so it must be seen) and that it counts exactly as `penalty` does, in the same
 * window: what the gate decides from it is what the library would have answered.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { memoryStore } from '../../src/rate-limit/store.js';

describe('rate limit: the memory store counts a charge at once', () => {
  it('when a charge is counted by penaltyNow, then it is in the same window as penalty counts in, with the same answer', async () => {
    const counter = memoryStore().counter({ name: 'quota:test:minute', points: 5, duration: 60 });
    assert.equal(typeof counter.penaltyNow, 'function', 'the memory counter has no penaltyNow: rate-limiter-flexible changed its memory storage');

    const first = counter.penaltyNow!('42', 2);
    assert.equal(first.consumedPoints, 2);
    assert.equal(first.remainingPoints, 3);
    assert.ok(first.msBeforeNext > 59_000 && first.msBeforeNext <= 60_000, `msBeforeNext ${first.msBeforeNext}`);

    // penalty and get see what penaltyNow counted, and penaltyNow sees what penalty counted.
    const second = await counter.penalty('42', 1);
    assert.equal(second.consumedPoints, 3);
    assert.equal(second.remainingPoints, 2);
    const third = counter.penaltyNow!('42', 3);
    assert.equal(third.consumedPoints, 6);
    assert.equal(third.remainingPoints, 0, 'over the points: nothing remains (the gate refuses and gives the points back)');
    assert.ok(third.msBeforeNext <= second.msBeforeNext, 'a charge does not move the window');
    const read = await counter.get('42');
    assert.equal(read?.consumedPoints, 6);

    // Another key has its own window.
    assert.equal(counter.penaltyNow!('43', 1).consumedPoints, 1);
  });

  it('when a window has ended, then penaltyNow starts a new one, as penalty does', async () => {
    const counter = memoryStore().counter({ name: 'quota:test:second', points: 5, duration: 1 });
    counter.penaltyNow!('7', 4);
    await new Promise((r) => setTimeout(r, 1100));
    const fresh = counter.penaltyNow!('7', 1);
    assert.equal(fresh.consumedPoints, 1);
    assert.ok(fresh.msBeforeNext > 900 && fresh.msBeforeNext <= 1000, `msBeforeNext ${fresh.msBeforeNext}`);
  });
});
