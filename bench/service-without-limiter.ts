/**
 * The service with its rate limiter replaced by a gate that charges nothing and sets no headers, so
 * that `limiter-on / limiter-off` measures exactly what the limiter costs a request. Benchmark only:
 * it is not reachable through any configuration of `dist/src/main.js`.
 */
import 'reflect-metadata';
import { loadConfig } from '../src/config.js';
import { createApp } from '../src/app.js';
import type { RateLimitGate } from '../src/rate-limit/index.js';

const none = async () => ({});
const passThrough: RateLimitGate = {
  charge: none,
  anonymous: none,
  isAddressBlocked: () => false,
  trackedAddresses: () => 0,
  status: async (actor) => {
    const usage = { limit: 0, used: 0, remaining: 0, reset: 0, windowSeconds: 0 };
    return { plan: actor.plan, resources: { minute: usage, day: usage } };
  },
  bans: { bannedUntil: async () => null, lift: async () => {} },
  ready: async () => ({ ok: true, store: 'memory' }),
  close: async () => {},
};

const config = loadConfig();
const app = await createApp(config, { gate: passThrough });
const { url } = await app.listen();
process.stdout.write(`Petstore API on ${url}/v1 (rate limiter disabled: benchmark only)\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
