// rate-limiter-flexible's modules one by one (the package has no "exports" map, so its files are public paths):
// its index loads every store it supports (MongoDB, MySQL, PostgreSQL, DynamoDB, Prisma, etcd, Valkey, …); the
// service needs the memory counter always and the Redis one only with REDIS_URL. Types from the package's own.
declare module 'rate-limiter-flexible/lib/RateLimiterMemory.js' {
  import { RateLimiterMemory } from 'rate-limiter-flexible';
  export = RateLimiterMemory;
}
declare module 'rate-limiter-flexible/lib/RateLimiterRedis.js' {
  import { RateLimiterRedis } from 'rate-limiter-flexible';
  export = RateLimiterRedis;
}
declare module 'rate-limiter-flexible/lib/RateLimiterRes.js' {
  import { RateLimiterRes } from 'rate-limiter-flexible';
  export = RateLimiterRes;
}
