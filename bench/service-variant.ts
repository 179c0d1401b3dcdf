/**
 * The service with one part taken out, so that a ratio in one run measures exactly what that part costs. Benchmark
 * only: no configuration of `dist/src/main.js` reaches either. `VARIANT` (run by bench/run.ts):
 *
 * - `no-limiter`: the rate limiter replaced by a gate that charges nothing and sets no headers (`limiter-on /
 *   limiter-off`);
 * - `no-outbox`: the outbox's writes off: placing an order (and every other store change) writes no `events` rows,
 *   everything else as served (`order with outbox / without`).
 */
import 'reflect-metadata';
import { loadConfig } from '../src/config.js';
import { createApp } from '../src/app.js';
import type { RateLimitGate } from '../src/rate-limit/index.js';

const none = async () => ({});
const passThrough: RateLimitGate = {
  charge: none,
  anonymous: none,
  addressHeaders: () => ({}),
  refuseKnownBan: () => {},
  isAddressBlocked: () => false,
  trackedAddresses: () => 0,
  status: async (actor) => {
    const usage = { limit: 0, used: 0, remaining: 0, reset: 0, windowSeconds: 0 };
    return { plan: actor.plan, resources: { minute: usage, day: usage }, bannedUntil: null };
  },
  bans: { bannedUntil: async () => null, lift: async () => {} },
  ready: async () => ({ ok: true, store: 'memory' }),
  close: async () => {},
};

const VARIANTS = {
  'no-limiter': { options: { gate: passThrough }, says: 'rate limiter disabled' },
  'no-outbox': { options: { outbox: false }, says: 'outbox writes off' },
} as const;
const variant = VARIANTS[process.env.VARIANT as keyof typeof VARIANTS];
if (!variant) throw new Error(`VARIANT must be one of ${Object.keys(VARIANTS).join(', ')}, got ${process.env.VARIANT}`);

const app = await createApp(loadConfig(), variant.options);
const { url } = await app.listen();
process.stdout.write(`Petstore API on ${url}/v1 (${variant.says}: benchmark only)\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
