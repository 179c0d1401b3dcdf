import type { Context, Middleware, Next } from 'koa';

/** One named middleware of the walk (names are what docs/ARCHITECTURE.md lists, and a test compares). */
export interface Step {
  name: string;
  middleware: Middleware;
}

/** The steps a request takes when its path is one of `paths` (exactly, or a path under it). */
export interface Route {
  paths: string[];
  steps: Step[];
}

/** The walk as names: the edge every request crosses, then exactly one route, else the last step. */
export interface WalkPlan {
  edge: string[];
  routes: Array<{ paths: string[]; steps: string[] }>;
  otherwise: string;
}

export const step = (name: string, middleware: Middleware): Step => ({ name, middleware });
export const route = (paths: string[], ...steps: Step[]): Route => ({ paths, steps });

/**
 * A request walks one way: through the edge, then down the one route its path selects (REST never
 * crosses GraphQL's middleware, nor GraphQL REST's), ending at `otherwise` (the 404) when the route's
 * steps pass it on or no route matches.
 */
export function requestWalk(edge: Step[], routes: Route[], otherwise: Step): { middleware: Middleware; plan: WalkPlan } {
  const end = otherwise.middleware;
  const table = routes.map((r) => ({
    paths: r.paths,
    run: chain(
      r.steps.map((s) => s.middleware),
      end,
    ),
  }));
  const select = (path: string) => table.find((r) => r.paths.some((p) => path === p || (path.startsWith(p) && path[p.length] === '/')));
  const dispatch: Middleware = (ctx: Context, next: Next) => (select(ctx.request.path)?.run ?? end)(ctx, next);
  return {
    middleware: chain(
      edge.map((s) => s.middleware),
      dispatch,
    ),
    plan: {
      edge: edge.map((s) => s.name),
      routes: routes.map((r) => ({ paths: r.paths, steps: r.steps.map((s) => s.name) })),
      otherwise: otherwise.name,
    },
  };
}

/** `steps` in order, each one's `next` the following one, the last one's `last`. */
function chain(steps: Middleware[], last: Middleware): Middleware {
  return steps.reduceRight<Middleware>((after, middleware) => (ctx, next) => middleware(ctx, () => after(ctx, next)), last);
}
