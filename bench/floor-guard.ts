/**
 * The floors' share of the service's edge (F and F_apollo alike): the bench key looked up in a Map, the account
 * charged on a minute and a day window of rate-limiter-flexible, and the five headers every answer carries.
 */
import type { Middleware } from 'koa';
import { RateLimiterMemory } from 'rate-limiter-flexible';

/** `unknownKey`: the 401 body, in the shape of the facade the floor stands for. */
export function floorGuard(unknownKey: object): Middleware {
  const keys = new Map([[process.env.KEY ?? '', { accountId: 1, plan: 'enterprise' }]]);
  const minute = new RateLimiterMemory({ points: 1_000_000, duration: 60, keyPrefix: 'm' });
  const day = new RateLimiterMemory({ points: 100_000_000, duration: 86_400, keyPrefix: 'd' });
  return async (ctx, next) => {
    const actor = keys.get(ctx.get('x-api-key'));
    if (!actor) {
      ctx.status = 401;
      ctx.body = unknownKey;
      return;
    }
    const [m] = await Promise.all([minute.consume(actor.accountId), day.consume(actor.accountId)]);
    ctx.set({
      'X-RateLimit-Limit': '1000000',
      'X-RateLimit-Remaining': String(m.remainingPoints),
      'X-RateLimit-Reset': String(Math.ceil((Date.now() + m.msBeforeNext) / 1000)),
      'X-RateLimit-Resource': 'minute',
      'X-Request-Id': String(ctx.get('x-request-id') || Date.now()),
    });
    await next();
  };
}
