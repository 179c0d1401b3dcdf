export type { RateLimitGate, RateLimitStatus, WindowUsage } from './gate.js';
export { EXPOSED_HEADERS } from './gate.js';
export { createRateLimitGate } from './limiter.js';
