import { RateLimitRefusal, type RateLimitGate } from '../rate-limit/index.js';
import type { Metrics } from './metrics.js';

/**
 * The same gate, counting its refusals by plan (`anonymous` for the per-address limiter that guards
 * authentication). Both facades charge through the gate they are given, so one wrapper sees them all.
 */
export function instrumentGate(gate: RateLimitGate, metrics: Metrics): RateLimitGate {
  const count = (plan: string, error: unknown) => {
    if (error instanceof RateLimitRefusal) metrics.rateLimitRefused(plan, error.code);
  };
  return {
    ...gate,
    async charge(actor, cost, options) {
      try {
        return await gate.charge(actor, cost, options);
      } catch (error) {
        count(actor.plan, error);
        throw error;
      }
    },
    async anonymous(address, failedAuth) {
      try {
        return await gate.anonymous(address, failedAuth);
      } catch (error) {
        count('anonymous', error);
        throw error;
      }
    },
  };
}
