/**
 * GraphQL subscriptions over the graphql-ws protocol, on the same `/graphql` path as queries (a
 * WebSocket upgrade there). The API key comes in `connection_init` as `{"X-API-Key": …}`; an unknown
 * key closes the socket with 4403. Only subscription operations run here (queries and mutations go
 * over HTTP, where the rest of the request pipeline is); each started subscription costs 1 point,
 * events pushed cost nothing, and each plan caps the concurrent subscriptions of an account (across
 * instances when the slots are in Redis: src/events/subscription-slots.ts).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import { GraphQLError, getOperationAST, parse, validate, type DocumentNode, type GraphQLSchema, type ParseOptions, type ValidationRule } from 'graphql';
import { WebSocketServer } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import type { Logger } from 'pino';
import { DomainError, limitsFor, type Actor, type Domain, type EventSubscriptions } from '../domain/index.js';
import { describeError } from '../http/errors.js';
import type { ApiKeyAuthenticator } from '../http/authentication.js';
import type { RateLimitGate } from '../rate-limit/gate.js';
import type { SubscriptionSlot, SubscriptionSlots } from '../events/subscription-slots.js';
import { createLoaders } from './data.loaders.js';
import { formatError } from './error.mapping.js';
import type { GraphQLContext } from './graphql.context.js';
import { GRAPHQL_PATH } from './graphql.facade.js';

export interface SubscriptionServerOptions {
  schema: GraphQLSchema;
  gate: RateLimitGate;
  /** Domain services over a fresh EntityManager fork, per call. */
  domain: () => Domain;
  events: EventSubscriptions;
  /** Where the plan caps' slots are counted (this process, or Redis for every instance). */
  slots: SubscriptionSlots;
  /** The API key cache of the HTTP pipeline (src/http/authentication.ts). */
  authenticator: Pick<ApiKeyAuthenticator, 'authenticate' | 'mayBeValid'>;
  /** The client's address, as the HTTP pipeline computes it (TRUST_PROXY). */
  clientAddress(request: IncomingMessage): string;
  logger: Logger;
  parseOptions: ParseOptions;
  validationRules: ValidationRule[];
}

export interface SubscriptionServer {
  /** Subscriptions open on this instance (metrics). */
  active(): number;
  close(): Promise<void>;
}

/** A refusal before anything runs, in the error shape of the catalogue (plus `retryAfter` for a 429). */
function errorOf(error: unknown, requestId: string): GraphQLError {
  const known = describeError(error);
  if (!known) throw error;
  const retryAfter = known.headers['Retry-After'];
  return new GraphQLError(known.message, {
    extensions: {
      code: known.code,
      status: known.status,
      requestId,
      ...(known.details?.length ? { details: known.details } : {}),
      ...(retryAfter ? { retryAfter: Number(retryAfter) } : {}),
    },
  });
}

export function attachSubscriptionServer(server: Server, options: SubscriptionServerOptions): SubscriptionServer {
  // Messages are small (connection_init, a subscribe with one document): the ws default of 100 MiB is far too generous.
  const wss = new WebSocketServer({ server, path: GRAPHQL_PATH, maxPayload: 64 * 1024 });
  const actors = new WeakMap<object, Actor>();
  /** The slot of each open subscription, per socket (to release them when it closes). */
  const counted = new WeakMap<object, Map<string, SubscriptionSlot>>();
  let open = 0;
  const release = (slot: SubscriptionSlot | undefined) => {
    if (!slot) return;
    slot.release();
    open--;
  };

  const disposable = useServer<Record<string, unknown>, { actor?: Actor }>(
    {
      schema: options.schema,
      onConnect: async (ctx) => {
        const params = ctx.connectionParams ?? {};
        // `{"X-API-Key": …}`; clients that nest their HTTP headers (`{"headers": {…}}`) are understood too.
        const headers = (typeof params.headers === 'object' && params.headers ? params.headers : {}) as Record<string, unknown>;
        const key = params['X-API-Key'] ?? params['x-api-key'] ?? headers['X-API-Key'] ?? headers['x-api-key'];
        if (typeof key !== 'string' || !key) return false;
        // The failed-authentication limiter of the HTTP pipeline guards this door too: an address over
        // it gets no lookup for unknown keys, and every unknown key counts against it.
        const address = options.clientAddress(ctx.extra.request);
        if (options.gate.isAddressBlocked(address) && !(await options.authenticator.mayBeValid(key))) return false;
        const actor = await options.authenticator.authenticate(key).catch(() => null);
        if (!actor) {
          await options.gate.anonymous(address, true).catch(() => undefined);
          return false;
        }
        actors.set(ctx.extra, actor);
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const actor = actors.get(ctx.extra)!;
        const requestId = randomUUID();
        let document: DocumentNode;
        try {
          document = parse(payload.query, options.parseOptions);
        } catch (error) {
          return [errorOf(new DomainError('VALIDATION_FAILED', (error as Error).message), requestId)];
        }
        const invalid = validate(options.schema, document, options.validationRules);
        if (invalid.length) return invalid.map((e) => errorOf(new DomainError('VALIDATION_FAILED', e.message), requestId));
        const operation = getOperationAST(document, payload.operationName);
        if (operation?.operation !== 'subscription') {
          return [errorOf(new DomainError('VALIDATION_FAILED', 'Only subscriptions run over WebSocket; send queries and mutations to POST /graphql.'), requestId)];
        }
        const cap = limitsFor(actor.plan, actor.limits).subscriptions;
        const slot = await options.slots.acquire(actor.accountId, cap);
        if (!slot) {
          return [errorOf(new DomainError('PLAN_LIMIT_REACHED', `The ${actor.plan} plan allows ${cap} concurrent subscriptions; complete one first.`), requestId)];
        }
        try {
          await options.gate.charge(actor, 1);
        } catch (error) {
          slot.release();
          return [errorOf(error, requestId)];
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
        };
        return { schema: options.schema, document, operationName: payload.operationName, variableValues: payload.variables, contextValue };
      },
      // Refusals from onSubscribe are already in the catalogue's shape; graphql-js's own errors are mapped.
      onError: (_ctx, _id, _payload, errors) => errors.map((e) => (typeof e.extensions?.code === 'string' && e.extensions.status ? e.toJSON() : formatError(e.toJSON(), e))),
      onNext: (_ctx, _id, _payload, _args, result) => {
        if (!result.errors?.length) return;
        const unexpected = result.errors.filter((e) => !describeError(e.originalError));
        for (const e of unexpected) options.logger.error({ err: e.originalError ?? e }, 'unexpected GraphQL subscription error');
        return { ...result, errors: result.errors.map((e) => formatError(e.toJSON(), e)) };
      },
      onComplete: (ctx, id) => {
        const slots = counted.get(ctx.extra);
        release(slots?.get(id));
        slots?.delete(id);
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
    async close() {
      await disposable.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
