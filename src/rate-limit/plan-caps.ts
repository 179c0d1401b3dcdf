/**
 * The plan caps of the event channels, in one place: how many subscriptions an account may hold at
 * once and how many WebSocket connections it may keep open. The numbers per plan are the plan's
 * (src/domain/plans.ts, beside its quotas and webhook-endpoint cap); what follows from them is here.
 * The slots that count subscriptions across instances are in ./subscription-slots.ts.
 */
import { limitsFor, type Actor } from '../domain/index.js';

/** Concurrent subscriptions the actor's account may hold (on every instance together). */
export function subscriptionCap(actor: Pick<Actor, 'plan' | 'limits'>): number {
  return limitsFor(actor.plan, actor.limits).subscriptions;
}

/**
 * Open WebSocket connections an account may hold on one instance once authenticated: twice its
 * concurrent subscriptions, and at least 16 (tabs, reconnects whose old socket has not timed out yet).
 * Every socket costs memory whether it subscribes or not.
 */
export function connectionCap(actor: Pick<Actor, 'plan' | 'limits'>): number {
  return Math.max(16, 2 * subscriptionCap(actor));
}
