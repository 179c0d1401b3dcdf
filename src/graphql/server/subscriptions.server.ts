/**
 * GraphQL subscriptions over the graphql-ws protocol, on the same `/graphql` path as queries (a
 * WebSocket upgrade there). The API key comes in `connection_init` as `{"X-API-Key": …}`; an unknown
 * or banned key closes the socket with 4403, a key over its rate limit with 4429. Sockets are bounded
 * before and after that: per client address until `connection_init` is accepted (more are refused at
 * the upgrade, and each waits at most the init timeout), per account after it (plan-caps.ts).
 * Only subscription operations run here (queries and mutations go over HTTP). Each subscribe passes
 * the HTTP path's request preparation (request-preparation.ts) and costs 1 point; each answer pushed
 * is charged as it goes (subscription-meter.ts); each plan caps the concurrent subscriptions of an
 * account (across instances when the slots are in Redis: src/rate-limit/subscription-slots.ts).
 */
import { randomUUID } from 'node:crypto';
import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { GraphQLError, type ExecutionArgs, type GraphQLSchema } from 'graphql';
import type { Context, SubscribePayload } from 'graphql-ws';
import { WebSocketServer } from 'ws';
import { type Extra, useServer } from 'graphql-ws/use/ws';
import type { Logger } from 'pino';
import { DomainError, type Actor, type Domain, type EventSubscriptions } from '../../domain/index.js';
import { describeError } from '../../http/errors.js';
import type { ApiKeyAuthenticator } from '../../http/authentication.js';
import {
  connectionCap,
  FREE,
  RateLimitRefusal,
  refusalCharge,
  subscriptionCap,
  type RateLimitGate,
  type SubscriptionSlot,
  type SubscriptionSlots,
} from '../../rate-limit/index.js';
import { addressBucket } from '../../rate-limit/address-limiter.js';
import { createLoaders } from '../schema/data.loaders.js';
import { isRefusal, type RequestPreparation } from './request-preparation.js';
import { authError, callerOf } from '../../http/authentication.js';
import { formatError, messageOf, originalOf } from './error.mapping.js';
import type { GraphQLContext } from '../context.js';
import { GRAPHQL_PATH } from './graphql.facade.js';
import { meteredSubscribe, type PushMeter } from './subscription-meter.js';

/** How long a shutdown waits for WebSocket clients to answer the close frame before cutting their sockets. */
const CLOSE_HANDSHAKE_MS = 1000;

/** graphql-ws's "too many" close code: its clients treat it as final (no reconnect storm). */
const TOO_MANY = 4429;
/** WebSocket's "try again later": the key could not be checked (graphql-ws clients retry it). */
const TRY_AGAIN_LATER = 1013;
/** graphql-ws's close code for a subscribe whose id is still in use. */
const SUBSCRIBER_EXISTS = 4409;
/** graphql-ws's "forbidden" close code: no key, an unknown one, or a banned one. */
const FORBIDDEN = 4403;
/** How often the keys of open sockets are checked again besides the announced changes (one missed costs at most this). */
const KEY_RECHECK_MS = 1000;

export interface SubscriptionServerOptions {
  schema: GraphQLSchema;
  gate: RateLimitGate;
  /** Domain services over a fresh EntityManager fork, per call. */
  domain: () => Domain;
  events: EventSubscriptions;
  /** Where the plan caps' slots are counted (this process, or Redis for every instance). */
  slots: SubscriptionSlots;
  /** The API key cache of the HTTP pipeline (src/http/authentication.ts). */
  authenticator: Pick<ApiKeyAuthenticator, 'authenticate' | 'mayBeValid' | 'known'>;
  /** The client's address, as the HTTP pipeline computes it (TRUST_PROXY). */
  clientAddress(request: IncomingMessage): string;
  logger: Logger;
  /** The request preparation of the HTTP path (request-preparation.ts): every subscribe passes it. */
  preparation: RequestPreparation;
  /** Sockets not yet authenticated: how many one address may hold, and how long each may wait for `connection_init`. */
  sockets: { perAddress: number; initTimeoutMs: number };
  /** Whether a page on this origin may call the API (`CORS_ORIGINS`): browsers do not apply CORS to WebSockets. */
  originAllowed(origin: string): boolean;
}

/**
 * Whether a WebSocket upgrade comes from a page of the service's own host: its `Origin` names the host name the
 * request's `Host` does. Scheme and port are left out: a proxy in front may end TLS, change the port or drop it
 * from `Host`, and /graphiql's own subscriptions must still pass.
 */
function sameHost(origin: string, host: string | undefined): boolean {
  if (!host) return false;
  try {
    const name = (url: URL) => url.hostname.replace(/\.$/, '');
    return name(new URL(origin)) === name(new URL(`http://${host}`));
  } catch {
    return false;
  }
}

export interface SubscriptionServer {
  /** Subscriptions open on this instance (metrics). */
  active(): number;
  /**
   * Checks the key of every open socket again (called when a key or an account changed on any instance, and every
   * `KEY_RECHECK_MS`): a revoked or banned key's socket closes with 4403, which ends its subscriptions and frees
   * their plan slots.
   */
  recheckKeys(): Promise<void>;
  close(): Promise<void>;
}

/** A refusal before anything runs, in the error shape of the catalogue (plus `retryAfter` for a 429). */
function errorOf(error: unknown, requestId: string): GraphQLError {
  const original = originalOf(error);
  const known = describeError(original);
  if (!known) throw error;
  const retryAfter = known.headers['Retry-After'];
  return new GraphQLError(messageOf(original, known), {
    originalError: error as Error,
    extensions: {
      code: known.code,
      status: known.status,
      requestId,
      ...(known.details?.length ? { details: known.details } : {}),
      ...(retryAfter ? { retryAfter: Number(retryAfter) } : {}),
    },
  });
}

/** Refusals made here (errorOf) are already in the catalogue's shape; graphql-js's own errors are mapped. */
const toWire = (e: GraphQLError) =>
  typeof e.extensions?.code === 'string' && e.extensions.status ? e.toJSON() : formatError(e.toJSON(), e);

export function attachSubscriptionServer(server: Server, options: SubscriptionServerOptions): SubscriptionServer {
  // Messages are small (connection_init, a subscribe with one document): the ws default of 100 MiB is far too generous.
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  /** Sockets per client address that have no accepted `connection_init` yet. */
  const unauthenticated = new Map<string, number>();
  /** Takes a socket out of its address's count (once): when its key is accepted, or when it closes. */
  const authenticated = new WeakMap<object, () => void>();
  // Only a WebSocket upgrade of /graphql is ours: any other request that asks for an upgrade (curl's
  // `Upgrade: h2c`, a WebSocket to another path) is answered as the plain request it also is.
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== GRAPHQL_PATH || request.headers.upgrade?.toLowerCase() !== 'websocket') {
      answerAsPlainRequest(server, request, socket, head);
      return;
    }
    const address = options.clientAddress(request);
    // A browser sends its page's Origin and lets any page open a WebSocket anywhere: a page of another origin than
    // the service's own host or CORS_ORIGINS' is refused, as its HTTP requests are. Clients outside browsers send none.
    const origin = request.headers.origin;
    if (origin !== undefined && !sameHost(origin, request.headers.host) && !options.originAllowed(origin)) {
      const shown = origin.length > 100 ? `${origin.slice(0, 100)}…` : origin;
      const message = `WebSocket connections from pages of ${shown} are not allowed: the service's CORS_ORIGINS must list the origin (as for its HTTP requests).`;
      answerError(request, socket, 403, 'FORBIDDEN', message, options.gate.addressHeaders(address));
      return;
    }
    // Counted before the handshake, so one address cannot hold more than its share of sockets that
    // have shown no key; one over it is refused before it becomes a WebSocket at all.
    // An IPv6 client holds a /64, as the rate limits see it: its addresses share one cap.
    const bucket = addressBucket(address);
    const held = unauthenticated.get(bucket) ?? 0;
    if (held >= options.sockets.perAddress) {
      const message = `Your address (an IPv6 /64 counts as one) has ${held} WebSocket connections waiting for connection_init; send it on one of them first.`;
      answerError(request, socket, 429, 'RATE_LIMITED', message, {
        ...options.gate.addressHeaders(address),
        'Retry-After': String(Math.ceil(options.sockets.initTimeoutMs / 1000)),
      });
      return;
    }
    unauthenticated.set(bucket, held + 1);
    let counted = true;
    const uncount = () => {
      if (!counted) return;
      counted = false;
      const left = (unauthenticated.get(bucket) ?? 1) - 1;
      if (left > 0) unauthenticated.set(bucket, left);
      else unauthenticated.delete(bucket);
    };
    socket.once('close', uncount);
    wss.handleUpgrade(request, socket, head, (ws) => {
      authenticated.set(ws, uncount);
      wss.emit('connection', ws, request);
    });
  };
  server.on('upgrade', onUpgrade);
  /** The raw key of each socket: every subscribe, and every event pushed, re-checks it (revocation, ban, role). */
  const keys = new WeakMap<object, string>();
  const stillValid = async (key: string): Promise<Actor | null> => {
    const actor = await options.authenticator.authenticate(key).catch(() => null);
    return actor && !(actor.bannedUntil && actor.bannedUntil > Date.now()) ? actor : null;
  };
  /** The key of each open authenticated socket, for `recheckKeys`. */
  const live = new Map<{ close(code: number, reason: string): void }, string>();
  let rechecking: Promise<void> | undefined;
  const recheckKeys = (): Promise<void> =>
    (rechecking ??= (async () => {
      try {
        await Promise.all(
          [...live].map(async ([socket, key]) => {
            // A key that cannot be checked now (database busy) keeps its socket until a check says otherwise.
            const actor = await options.authenticator.authenticate(key).catch(() => undefined);
            if (actor === undefined || !live.has(socket)) return;
            if (actor === null) socket.close(FORBIDDEN, 'INVALID_API_KEY: the API key was revoked.');
            else if (actor.bannedUntil && actor.bannedUntil > Date.now()) socket.close(FORBIDDEN, 'API_KEY_BANNED: the API key is banned.');
          }),
        );
      } finally {
        rechecking = undefined;
      }
    })());
  const recheckTimer = setInterval(() => {
    if (live.size) void recheckKeys();
  }, KEY_RECHECK_MS);
  recheckTimer.unref();
  /** Open authenticated sockets per account (connectionCap). */
  const connections = new Map<number, number>();
  /** The slot of each open subscription, per socket (to release them when it closes). */
  const counted = new WeakMap<object, Map<string, SubscriptionSlot>>();
  /**
   * Per socket, the ids whose subscribe has not ended yet on this side (from `onSubscribe` to its `onComplete`, or
   * its refusal). graphql-ws lets a client reuse an id as soon as it has sent `complete`, even while the first
   * subscribe is still being prepared: both would then run under one id, and the first would outlive the socket.
   * A subscribe reusing an id before its previous one ended is a duplicate (4409), as graphql-ws treats a live one.
   */
  const busy = new WeakMap<object, Set<string>>();
  const idle = (extra: object, id: string) => busy.get(extra)?.delete(id);
  let open = 0;
  const release = (slot: SubscriptionSlot | undefined) => {
    if (!slot) return;
    slot.release();
    open--;
  };

  /** The subscribe of `id` on a socket: its execution arguments, or the errors that refuse it (its slot released). */
  const startSubscription = async (
    ctx: Context<Record<string, unknown>, { actor?: Actor }> & { extra: Extra },
    id: string,
    payload: SubscribePayload,
  ): Promise<ExecutionArgs | readonly GraphQLError[]> => {
    const requestId = randomUUID();
    const key = keys.get(ctx.extra)!;
    // The socket may have outlived its key (revoked) or its role: each subscribe looks again (a ban is the gate's refusal below).
    const actor = await options.authenticator.authenticate(key).catch(() => null);
    if (!actor) return [errorOf(authError('INVALID_API_KEY'), requestId)];
    // The same preparation as over HTTP: parsing, the spec's rules and the query limits, shape, cost and charge;
    // the plan cap is taken just before the charge (a subscription refused for it costs 1 point, as a refusal).
    const cap = subscriptionCap(actor);
    let slot: SubscriptionSlot | null = null;
    const prepared = await options.preparation.prepare(payload, { actor }, 'websocket', async () => {
      slot = await options.slots.acquire(actor.accountId, cap);
      return slot
        ? undefined
        : new DomainError('PLAN_LIMIT_REACHED', `The ${actor.plan} plan allows ${cap} concurrent subscriptions; complete one first.`);
    });
    if (isRefusal(prepared) || !slot) {
      (slot as SubscriptionSlot | null)?.release();
      if (!isRefusal(prepared)) return [];
      // A refused document is charged as over HTTP (refusalCharge).
      const [refusal] = prepared.refused;
      const known = describeError(refusal);
      const extensions = refusal instanceof GraphQLError ? refusal.extensions : undefined;
      const status = known?.status ?? (typeof extensions?.status === 'number' ? extensions.status : 400);
      const charge = refusalCharge(status, known?.code ?? (extensions?.code as string | undefined));
      const limited =
        charge !== 'none'
          ? await options.gate.charge(actor, charge === 'point' ? 1 : 0, charge === 'point' ? undefined : FREE).then(
              () => undefined,
              (error: unknown) => error,
            )
          : undefined;
      return (limited ? [limited] : prepared.refused).map((e) => errorOf(e, requestId));
    }
    open++;
    let slots = counted.get(ctx.extra);
    if (!slots) counted.set(ctx.extra, (slots = new Map()));
    // The socket may have closed while the slot was being taken: then nothing will complete it.
    if (ctx.extra.socket.readyState !== ctx.extra.socket.OPEN) {
      release(slot);
      return [errorOf(new DomainError('VALIDATION_FAILED', 'The connection closed.'), requestId)];
    }
    slots.set(id, slot);
    let domain = options.domain();
    const loaders = createLoaders(() => domain);
    // Each event is resolved over a fresh identity map, so nested fields read the current state.
    const clear = loaders.clearAll.bind(loaders);
    loaders.clearAll = () => {
      domain = options.domain();
      clear();
    };
    const contextValue: GraphQLContext = {
      get domain() {
        return domain;
      },
      actor,
      loaders,
      clientAddress: options.clientAddress(ctx.extra.request),
      requestId,
      observed: {},
      events: options.events,
      currentActor: () => stillValid(key),
      // The back-fill's pages are the service's own work for the subscription: a refusal ends it, and is no retry.
      charge: (cost) => options.gate.charge(actor, cost, { pushed: true }).then(() => undefined),
    };
    meters.set(contextValue, { actor, requested: prepared.cost.requested });
    return {
      schema: options.schema,
      document: prepared.document,
      operationName: payload.operationName,
      variableValues: payload.variables,
      contextValue,
    };
  };

  /** Who pays each subscription's pushed answers and its document's cost, by its context. */
  const meters = new WeakMap<object, PushMeter>();
  const disposable = useServer<Record<string, unknown>, { actor?: Actor }>(
    {
      schema: options.schema,
      subscribe: meteredSubscribe({
        gate: options.gate,
        meterOf: (args) => meters.get(args.contextValue as object),
        refusal: (error, args) => ({ errors: [errorOf(error, (args.contextValue as GraphQLContext).requestId)] }),
      }),
      connectionInitWaitTimeout: options.sockets.initTimeoutMs,
      onConnect: async (ctx) => {
        const params = ctx.connectionParams ?? {};
        // `{"X-API-Key": …}` in any case, as the HTTP header; clients that nest their HTTP headers (`{"headers": {…}}`) are understood too.
        const headers = (typeof params.headers === 'object' && params.headers ? params.headers : {}) as Record<string, unknown>;
        const key = apiKeyIn(params) ?? apiKeyIn(headers);
        // The failed-authentication limiter of the HTTP pipeline guards this door too: an address over
        // it gets no lookup for unknown keys, and every unknown key, or none, counts against it.
        const address = options.clientAddress(ctx.extra.request);
        if (typeof key !== 'string' || !key) {
          await options.gate.anonymous(address, true).catch(() => undefined);
          ctx.extra.socket.close(FORBIDDEN, 'UNAUTHENTICATED: send your API key in connection_init as {"X-API-Key": "psk_…"}.');
          return false;
        }
        const actor = await callerOf(options.authenticator, options.gate, address, key).catch(() => undefined);
        if (actor === undefined) {
          // The key could not be checked (the database is busy or unreachable): as HTTP's 503, not a failed authentication.
          ctx.extra.socket.close(TRY_AGAIN_LATER, 'UNAVAILABLE: your API key could not be checked; retry shortly.');
          return false;
        }
        if (!actor) {
          await options.gate.anonymous(address, true).catch(() => undefined);
          ctx.extra.socket.close(FORBIDDEN, 'INVALID_API_KEY: the API key is unknown or revoked.');
          return false;
        }
        // A banned key, or one with no point left, is refused here as it would be over HTTP (nothing is consumed).
        try {
          await options.gate.charge(actor, 1, { consume: false });
        } catch (error) {
          if (!(error instanceof RateLimitRefusal)) throw error;
          ctx.extra.socket.close(error.code === 'API_KEY_BANNED' ? FORBIDDEN : TOO_MANY, closeReason(`${error.code}: ${error.message}`));
          return false;
        }
        const cap = connectionCap(actor);
        const held = connections.get(actor.accountId) ?? 0;
        if (held >= cap) {
          ctx.extra.socket.close(TOO_MANY, `PLAN_LIMIT_REACHED: this account has ${cap} connections open here; close one first.`);
          return false;
        }
        authenticated.get(ctx.extra.socket)?.();
        connections.set(actor.accountId, held + 1);
        live.set(ctx.extra.socket, key);
        ctx.extra.socket.once('close', () => {
          live.delete(ctx.extra.socket);
          const left = (connections.get(actor.accountId) ?? 1) - 1;
          if (left > 0) connections.set(actor.accountId, left);
          else connections.delete(actor.accountId);
        });
        keys.set(ctx.extra, key);
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        let ids = busy.get(ctx.extra);
        if (!ids) busy.set(ctx.extra, (ids = new Set()));
        if (ids.has(id)) {
          ctx.extra.socket.close(SUBSCRIBER_EXISTS, closeReason(`Subscriber for ${id} already exists`));
          return [new GraphQLError(`Subscriber for ${id} already exists`)];
        }
        ids.add(id);
        try {
          const prepared = await startSubscription(ctx, id, payload);
          if (Array.isArray(prepared)) idle(ctx.extra, id);
          return prepared;
        } catch (error) {
          idle(ctx.extra, id);
          throw error;
        }
      },
      onError: (_ctx, _id, _payload, errors) => errors.map(toWire),
      onNext: (_ctx, _id, _payload, args, result) => {
        if (!result.errors?.length) return;
        const requestId = (args.contextValue as GraphQLContext | undefined)?.requestId;
        const unexpected = result.errors.filter((e) => !describeError(e.originalError));
        for (const e of unexpected) options.logger.error({ err: e.originalError ?? e, requestId }, 'unexpected GraphQL subscription error');
        return {
          ...result,
          errors: result.errors.map((e) => {
            const formatted = toWire(e);
            // A refusal that ends the subscription mid-way (a back-fill page the budget refused) says when to retry, as at its start.
            const retryAfter = describeError(originalOf(e))?.headers['Retry-After'];
            return {
              ...formatted,
              extensions: { ...formatted.extensions, requestId, ...(retryAfter ? { retryAfter: Number(retryAfter) } : {}) },
            };
          }),
        };
      },
      onComplete: (ctx, id) => {
        const slots = counted.get(ctx.extra);
        release(slots?.get(id));
        slots?.delete(id);
        idle(ctx.extra, id);
      },
      onClose: (ctx) => {
        for (const slot of counted.get(ctx.extra)?.values() ?? []) release(slot);
        counted.delete(ctx.extra);
      },
    },
    wss,
  );

  return {
    active: () => open,
    recheckKeys,
    async close() {
      clearInterval(recheckTimer);
      // graphql-ws closes every socket with 1001 and waits for each client's closing handshake; a client
      // that never answers would hold the whole shutdown (the HTTP drain runs beside this). Past a
      // second, the sockets that are still open are cut.
      const cut = setTimeout(() => {
        for (const socket of wss.clients) socket.terminate();
      }, CLOSE_HANDSHAKE_MS);
      server.off('upgrade', onUpgrade);
      try {
        await disposable.dispose();
        await new Promise<void>((resolve) => wss.close(() => resolve()));
      } finally {
        clearTimeout(cut);
      }
    },
  };
}

/**
 * Serves a request that asked for a protocol upgrade we do not offer, as Node would without an upgrade
 * listener: through the app's request handler, on a connection that closes after the answer. Only a
 * request without a body can be served so (Node stops parsing at the headers of an upgrade request).
 */
function answerAsPlainRequest(server: Server, request: IncomingMessage, socket: Duplex, head: Buffer): void {
  if (head.length) socket.unshift(head);
  const response = closingResponse(request, socket);
  const bodyless =
    (request.method === 'GET' || request.method === 'HEAD') && !request.headers['content-length'] && !request.headers['transfer-encoding'];
  if (bodyless) {
    server.emit('request', request, response);
    return;
  }
  answerError(
    request,
    socket,
    400,
    'VALIDATION_FAILED',
    'This request asks for a protocol upgrade this service does not offer here; send it without Upgrade.',
    {},
    response,
  );
}

/** Answers an upgrade request with an error in the catalogue's shape, on a connection that closes after it. */
function answerError(
  request: IncomingMessage,
  socket: Duplex,
  status: number,
  code: string,
  message: string,
  headers: Record<string, string>,
  response = closingResponse(request, socket),
): void {
  const requestId = randomUUID();
  const body = JSON.stringify({ code, message, status, requestId });
  response.writeHead(status, {
    ...headers,
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'X-Request-Id': requestId,
    Connection: 'close',
  });
  response.end(body);
}

/** A response written straight onto an upgrade request's socket, which ends once it is sent. */
function closingResponse(request: IncomingMessage, socket: Duplex): ServerResponse {
  const response = new ServerResponse(request);
  response.shouldKeepAlive = false;
  response.assignSocket(socket as Socket);
  response.once('finish', () => {
    response.detachSocket(socket as Socket);
    socket.end();
  });
  return response;
}

/** The value of `params`' `X-API-Key`, whatever its case. */
function apiKeyIn(params: Record<string, unknown>): unknown {
  for (const name in params) if (name.toLowerCase() === 'x-api-key') return params[name];
  return undefined;
}

/** A WebSocket close reason holds at most 123 bytes. */
function closeReason(message: string): string {
  const bytes = Buffer.from(message);
  return bytes.length <= 123
    ? message
    : `${bytes
        .subarray(0, 120)
        .toString('utf8')
        .replace(/\uFFFD$/, '')}…`;
}
