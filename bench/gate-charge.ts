/**
 * Micro-benchmark behind "a charge counts both windows at once" (docs/DECISIONS.md): what the gate costs per request
 * with the memory store, and the two ways of counting a charge's two windows: rate-limiter-flexible's `penalty`
 * (a promise each, awaited together, as the gate does with Redis) and `penaltyNow` (the same count without the
 * promises, src/rate-limit/store.ts).
 *
 *   npm run build && node dist/bench/gate-charge.js [--rounds 3]
 *
 * Copied with cli.js into another build's dist/bench/ (`bash bench/build-ref.sh <commit>`), it measures that build's gate (a build
 * without `penaltyNow` prints – for it).
 */
import { benchArgs } from './cli.js';
import { loadConfig } from '../src/config.js';
import { createRateLimitGate } from '../src/rate-limit/index.js';
import { memoryStore } from '../src/rate-limit/store.js';
import type { Actor } from '../src/domain/index.js';

const { values: args } = benchArgs(import.meta.url, { options: { rounds: { type: 'string', default: '3' } } });
const N = 200_000;

/** Nanoseconds per call of `f`, awaited one after another, after a warm-up of `N / 4`. */
async function perCall(f: () => unknown): Promise<number> {
  for (let i = 0; i < N / 4; i++) await f();
  const started = process.hrtime.bigint();
  for (let i = 0; i < N; i++) await f();
  return Number(process.hrtime.bigint() - started) / N;
}

const gate = await createRateLimitGate(loadConfig({ ...process.env, REDIS_URL: '' }));
// An enterprise account whose limits the run never reaches, as the bench's key.
const actor = { accountId: 1, keyId: 1, plan: 'enterprise', role: 'customer', limits: { perMinute: 1e9, perDay: 1e10 } } as unknown as Actor;
const store = memoryStore();
const minute = store.counter({ name: 'minute', points: 1e9, duration: 60 });
const day = store.counter({ name: 'day', points: 1e10, duration: 86_400 });

for (let round = 1; round <= Number(args.rounds); round++) {
  const charge = await perCall(() => gate.charge(actor, 1));
  const promised = await perCall(() => Promise.all([null, minute.penalty('1', 1), day.penalty('1', 1)]));
  const now = minute.penaltyNow && day.penaltyNow ? await perCall(() => [minute.penaltyNow!('1', 1), day.penaltyNow!('1', 1)]) : undefined;
  process.stdout.write(
    `round ${round}: gate.charge ${charge.toFixed(0)} ns · two windows by penalty + Promise.all ${promised.toFixed(0)} ns · by penaltyNow ${now?.toFixed(0) ?? '–'} ns (each awaited: ~80 ns of it)\n`,
  );
}
await gate.close();
