import type { Context, Middleware, Next } from 'koa';
import { setHeader } from './headers.js';

export interface HealthSources {
  /** Whether the database answers a trivial query (and, on SQLite after a full disk, could write again): `databaseReady`. */
  database(): Promise<boolean>;
  /** The limiter store's readiness (a Redis outage is reported but stays ok: the insurance limiter serves). */
  limiter: { ready(): Promise<{ ok: boolean; store: string; redis?: string; degraded?: boolean }> };
  /** Whether shutdown has begun (the app's lifecycle). */
  shuttingDown(): boolean;
  /** The Prometheus exposition, or undefined when metrics are off. */
  metrics?: { render(): Promise<{ contentType: string; body: string }> };
}

/** The health paths (each answered exactly; anything under them is a 404). */
export const HEALTH_PATHS = ['/healthz', '/readyz', '/metrics'];

/** `/healthz` (alive), `/readyz` (database and limiter store; 503 while shutting down) and `/metrics`: public, not rate limited. */
export function healthRoutes(sources: HealthSources): Middleware {
  const readiness = async () => {
    const database = await sources.database().catch(() => false);
    const limiter = await sources.limiter.ready().catch(() => ({ ok: false, store: 'unknown', redis: undefined, degraded: undefined }));
    return {
      database,
      limiter: limiter.ok,
      limiterStore: limiter.store,
      ...(limiter.redis ? { redis: limiter.redis } : {}),
      // Serving on the per-instance insurance limiters (Redis down or hung): still ready.
      ...(limiter.degraded ? { limiterDegraded: true } : {}),
    };
  };
  return async (ctx: Context, next: Next) => {
    if (ctx.path === '/healthz') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/metrics' && sources.metrics) {
      const { contentType, body } = await sources.metrics.render();
      setHeader(ctx, 'Cache-Control', 'no-store');
      ctx.type = contentType;
      ctx.body = body;
      return;
    }
    if (ctx.path === '/readyz') {
      const checks = await readiness();
      const shuttingDown = sources.shuttingDown();
      const ok = !shuttingDown && checks.database && checks.limiter;
      ctx.status = ok ? 200 : 503;
      ctx.body = { status: shuttingDown ? 'shutting-down' : ok ? 'ready' : 'unavailable', checks };
      return;
    }
    return next();
  };
}
