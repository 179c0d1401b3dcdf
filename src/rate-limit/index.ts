export { FREE, type ChargeOptions, type RateLimitGate, type RateLimitStatus, type WindowUsage } from './gate.js';
export {
  FREE_GRAPHQL_ROOT_FIELDS,
  graphqlCost,
  pushCost,
  refusalCharge,
  restCost,
  type GraphQLOperationShape,
  type RefusalCharge,
} from './cost.js';
export { RateLimitRefusal, type RefusalCode } from './refusal.js';
export { createRateLimitGate } from './limiter.js';
export { rateLimitHeaders, type RateLimitCaller } from './headers.js';
export { connectionCap, subscriptionCap } from './plan-caps.js';
export { createSubscriptionSlots, type SubscriptionSlot, type SubscriptionSlots } from './subscription-slots.js';
