import type { Context } from 'koa';
import type { Actor, Domain } from '../domain/index.js';

export type Facade = 'rest' | 'graphql' | 'meta';

/** Which facade a path belongs to (before any facade has claimed the request). */
export const facadeOf = (path: string): Facade =>
  path === '/v1' || path.startsWith('/v1/') ? 'rest' : path === '/graphql' || path.startsWith('/graphql/') ? 'graphql' : 'meta';

/**
 * A request header by its lower-case name, '' when absent: what Koa's `ctx.get(name)` gives. The request walk reads
 * Koa's request and response objects (`ctx.request.path`, `ctx.response.status = …`, this), not the context's
 * delegates: Koa makes the delegates of each kind (method, getter, setter) from one function literal, so in a server
 * each is a megamorphic access, several times slower than the object's own property; a REST read crossed about
 * twenty of them.
 */
export function requestHeader(ctx: Context, name: Lowercase<string>): string {
  const value = ctx.req.headers[name];
  return typeof value === 'string' ? value : '';
}

/** What `recheckKey` needs of the authenticator (src/http/authentication.ts). */
export interface KeyRecheck {
  readonly epoch: number;
  authenticate(rawKey: string, id?: string): Promise<Actor | null>;
}

/** What the shared middleware puts on `ctx.state` for the facades. */
export interface AppState {
  requestId: string;
  facade: Facade;
  /** The domain services over the request's own EntityManager fork (created on first use). */
  domain: Domain;
  /** Set when the request carried a valid API key. */
  actor?: Actor;
  /** Why there is no actor: no key, a key that is unknown or revoked, or a key that could not be checked (database busy). */
  authFailure?: 'UNAUTHENTICATED' | 'INVALID_API_KEY' | 'UNAVAILABLE';
  /**
   * With an actor: the authenticator and its epoch when the key was checked, for `recheckKey` (a key or account
   * changed on any instance since then: the key is checked again before a write).
   */
  keys?: { authenticator: KeyRecheck; epoch: number };
  /** Route template for logs and metrics, e.g. `GET /v1/pets/{petId}`. */
  route?: string;
  /** GraphQL operation name for logs. */
  operationName?: string;
  /** Bounded metrics label of the executed GraphQL operation, e.g. `query pets`. */
  operation?: string;
  /** The error code of an error response, for the request log. */
  errorCode?: string;
}
