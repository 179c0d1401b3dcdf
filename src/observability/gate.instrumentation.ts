import { RateLimitRefusal, type RateLimitGate } from '../rate-limit/index.js';
import type { Metrics } from './metrics.js';
import { inSpan, tracingOn } from './tracing.js';

/**
 * The same gate, counting its refusals by plan (`anonymous` for the per-address limiter that guards
 * authentication) and, when tracing is on, making each charge a `rate-limit` span (plan, cost,
 * outcome: `admitted` or the refusal's code). Both facades charge through the gate they are given, so
 * one wrapper sees them all.
 */
export function instrumentGate(gate: RateLimitGate, metrics: Metrics): RateLimitGate {
  const count = (plan: string, error: unknown) => {
    if (error instanceof RateLimitRefusal) metrics.rateLimitRefused(plan, error.code);
  };
  // A `catch` on the gate's promise rather than an async function awaiting it: one promise per charge, not three.
  const charge: RateLimitGate['charge'] = (actor, cost, options) =>
    gate.charge(actor, cost, options).catch((error: unknown) => {
      count(actor.plan, error);
      throw error;
    });
  return {
    ...gate,
    charge(actor, cost, options) {
      if (!tracingOn()) return charge(actor, cost, options);
      const attributes = {
        'petstore.rate_limit.plan': actor.plan,
        'petstore.rate_limit.cost': cost,
        'petstore.rate_limit.consume': options?.consume !== false,
      };
      return inSpan('rate-limit', { attributes }, async (span) => {
        try {
          const headers = await charge(actor, cost, options);
          span.setAttribute('petstore.rate_limit.outcome', 'admitted');
          return headers;
        } catch (error) {
          if (error instanceof RateLimitRefusal) span.setAttribute('petstore.rate_limit.outcome', error.code);
          throw error;
        }
      });
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
