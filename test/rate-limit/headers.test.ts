import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { keyedHeaders, nearestExhaustion, secondsUntil, type WindowState } from '../../src/rate-limit/headers.js';

const NOW = 1_800_000_000_000;
const minute = (used: number, resetIn = 42_000): WindowState => ({
  resource: 'minute',
  limit: 60,
  used,
  resetAt: NOW + resetIn,
  windowSeconds: 60,
});
const day = (used: number, resetIn = 3_600_000): WindowState => ({
  resource: 'day',
  limit: 1000,
  used,
  resetAt: NOW + resetIn,
  windowSeconds: 86_400,
});

describe('rate-limit headers', () => {
  it('when the minute has fewer requests left than the day, then the minute is nearest exhaustion', () => {
    assert.equal(nearestExhaustion([minute(3), day(120)]).resource, 'minute');
  });

  it('when the day has fewer requests left, then the day is shown', () => {
    assert.equal(nearestExhaustion([minute(3), day(990)]).resource, 'day');
  });

  it('when both windows have as many left, then the one that resets last is shown (waiting it out clears both)', () => {
    assert.equal(nearestExhaustion([minute(60), day(1000)]).resource, 'day');
  });

  it('when headers are built, then they carry the IETF fields and Unix-second reset of the window shown', () => {
    const windows = [minute(3, 41_200), day(120)];
    assert.deepEqual(keyedHeaders(windows, windows[0]!, NOW), {
      'x-ratelimit-limit': '60',
      'x-ratelimit-remaining': '57',
      'x-ratelimit-reset': String(Math.ceil((NOW + 41_200) / 1000)),
      'x-ratelimit-resource': 'minute',
      'ratelimit-policy': '"minute";q=60;w=60, "day";q=1000;w=86400',
      ratelimit: '"minute";r=57;t=42',
    });
  });

  it('when a window is over its limit (limits lowered), then Remaining is 0, never negative', () => {
    const windows = [minute(75), day(75)];
    assert.equal(keyedHeaders(windows, windows[0]!, NOW)['x-ratelimit-remaining'], '0');
  });

  it('when the wait is a fraction of a second or already over, then it is rounded up to at least 1 second', () => {
    assert.equal(secondsUntil(NOW + 1, NOW), 1);
    assert.equal(secondsUntil(NOW - 500, NOW), 1);
    assert.equal(secondsUntil(NOW + 1001, NOW), 2);
  });
});
