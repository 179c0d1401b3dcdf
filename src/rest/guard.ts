import type { Context } from 'koa';
import { keyRefusal } from '../http/authentication.js';
import type { AppState } from '../http/context.js';
import { rateLimitHeaders, restCost, type RateLimitGate } from '../rate-limit/index.js';
import type { CompiledOperation } from './openapi.js';
import type { RestGuard } from './router.js';
import { setHeaders } from '../http/headers.js';

/**
 * Once for every /v1 request, routed or not: a keyed caller is charged the operation's cost (a 304
 * is admitted or refused like any request, and consumes nothing); a caller without a valid key goes
 * through the per-address limiter and, unless the operation is public, is refused with 401. Either
 * way the rate-limit headers are on the response.
 */
export function restGuard(gate: Pick<RateLimitGate, 'charge' | 'anonymous' | 'refuseKnownBan'>): RestGuard {
  return async (ctx: Context, op: CompiledOperation | null, answer?: { notModified: boolean } | 'ahead') => {
    const state = ctx.state as AppState;
    // Before the answer is made: a key known to be banned is refused without a read (no charge: that follows the answer).
    if (answer === 'ahead') {
      if (state.actor && restCost(op) > 0) gate.refuseKnownBan(state.actor);
      return;
    }
    setHeaders(ctx, await rateLimitHeaders(gate, state, ctx.request.ip, restCost(op), { consume: !answer?.notModified, free: true }));
    if (state.actor) return;
    const refusal = op ? keyRefusal(state.authFailure, !op.public) : undefined;
    if (refusal) throw refusal;
  };
}
