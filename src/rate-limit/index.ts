export type { RateLimitGate, RateLimitStatus, WindowUsage } from './gate.js';
export { FREE_GRAPHQL_ROOT_FIELDS, graphqlCost, restCost, type GraphQLOperationShape } from './cost.js';
export { RateLimitRefusal, REFUSAL_CODES, type RefusalCode } from './refusal.js';
export { createRateLimitGate } from './limiter.js';
