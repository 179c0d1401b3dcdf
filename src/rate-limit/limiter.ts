import type { Config } from '../config.js';
import type { RateLimitGate } from './gate.js';

// Placeholder until the rate-limit issue lands: charges nothing and sends no headers.
export async function createRateLimitGate(_config: Config): Promise<RateLimitGate> {
  const window = (seconds: number) => ({ limit: 0, used: 0, remaining: 0, reset: 0, windowSeconds: seconds });
  return {
    charge: async () => ({}),
    anonymous: async () => ({}),
    status: async (actor) => ({ plan: actor.plan, resources: { minute: window(60), day: window(86400) } }),
    bans: { bannedUntil: async () => null, lift: async () => {} },
    ready: async () => ({ ok: true, store: 'memory' }),
    close: async () => {},
  };
}
