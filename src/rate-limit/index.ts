export type { RateLimitGate, RateLimitStatus, WindowUsage } from './gate.js';
export { EXPOSED_HEADERS, FREE_GRAPHQL_ROOT_FIELDS, restCost } from './gate.js';
export { createRateLimitGate } from './limiter.js';
