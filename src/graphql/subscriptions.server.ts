/**
 * GraphQL subscriptions over the graphql-ws protocol, on the same `/graphql` path as queries (a
 * WebSocket upgrade there). The API key comes in `connection_init` as `{"X-API-Key": …}`; an unknown
 * key closes the socket with 4403. Only subscription operations run here (queries and mutations go
 * over HTTP, where the rest of the request pipeline is); each started subscription costs 1 point,
 * events pushed cost nothing, and each plan caps the concurrent subscriptions of an account on an instance.
 */
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { GraphQLError, getOperationAST, parse, validate, type DocumentNode, type GraphQLSchema, type ParseOptions, type ValidationRule } from 'graphql';
import { WebSocketServer } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import type { Logger } from 'pino';
import { createDomain, DomainError, type Actor, type BanRegistry, type Domain, type EventSubscriptions, type WebhookPolicy } from '../domain/index.js';
import type { PlanName } from '../domain/entities/index.js';
import { EdgeError } from '../http/errors.js';
import type { RateLimitGate } from '../rate-limit/gate.js';
import type { Orm } from '../db/orm.js';
import { createLoaders } from './data.loaders.js';
import { extensionsOf } from './error.mapping.js';
import type { GraphQLContext } from './graphql.context.js';
import { GRAPHQL_PATH } from './graphql.middleware.js';

/** Concurrent subscriptions per account and instance, per plan. */
export const SUBSCRIPTION_CAPS: Record<PlanName, number> = { free: 2, pro: 10, business: 50, enterprise: 50 };

export interface SubscriptionServerOptions {
  schema: GraphQLSchema;
  orm: Orm;
  gate: RateLimitGate;
  bans: BanRegistry;
  webhooks: WebhookPolicy;
  events: EventSubscriptions;
  authenticate(key: string): Promise<Actor | null>;
  logger: Logger;
  parseOptions: ParseOptions;
  validationRules: ValidationRule[];
}

export interface SubscriptionServer {
  close(): Promise<void>;
}

const errorOf = (error: DomainError, requestId: string) => new GraphQLError(error.message, { extensions: { ...extensionsOf(error, requestId), ...(error instanceof EdgeError && error.headers['Retry-After'] ? { retryAfter: Number(error.headers['Retry-After']) } : {}) } });

export function attachSubscriptionServer(server: Server, options: SubscriptionServerOptions): SubscriptionServer {
  // Messages are small (connection_init, a subscribe with one document): the ws default of 100 MiB is far too generous.
  const wss = new WebSocketServer({ server, path: GRAPHQL_PATH, maxPayload: 64 * 1024 });
  const actors = new WeakMap<object, Actor>();
  /** Active subscriptions per account on this instance, and per socket (to release them when it closes). */
  const active = new Map<number, number>();
  const release = (accountId: number) => {
    const left = (active.get(accountId) ?? 1) - 1;
    if (left > 0) active.set(accountId, left);
    else active.delete(accountId);
  };
  const counted = new WeakMap<object, Set<string>>();

  const disposable = useServer<Record<string, unknown>, { actor?: Actor }>(
    {
      schema: options.schema,
      onConnect: async (ctx) => {
        const params = ctx.connectionParams ?? {};
        // `{"X-API-Key": …}`; clients that nest their HTTP headers (`{"headers": {…}}`) are understood too.
        const headers = (typeof params.headers === 'object' && params.headers ? params.headers : {}) as Record<string, unknown>;
        const key = params['X-API-Key'] ?? params['x-api-key'] ?? headers['X-API-Key'] ?? headers['x-api-key'];
        if (typeof key !== 'string' || !key) return false;
        const actor = await options.authenticate(key).catch(() => null);
        if (!actor) return false;
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
        const cap = SUBSCRIPTION_CAPS[actor.plan];
        if ((active.get(actor.accountId) ?? 0) >= cap) {
          return [errorOf(new DomainError('PLAN_LIMIT_REACHED', `The ${actor.plan} plan allows ${cap} concurrent subscriptions; complete one first.`), requestId)];
        }
        try {
          await options.gate.charge(actor, 1);
        } catch (error) {
          if (error instanceof DomainError) return [errorOf(error, requestId)];
          throw error;
        }
        active.set(actor.accountId, (active.get(actor.accountId) ?? 0) + 1);
        let ids = counted.get(ctx.extra);
        if (!ids) counted.set(ctx.extra, (ids = new Set()));
        ids.add(id);
        let domain: Domain = createDomain(options.orm.em.fork(), options.bans, options.webhooks);
        const contextValue = {
          state: {
            requestId,
            facade: 'graphql',
            actor,
            get domain() {
              return domain;
            },
          },
          loaders: createLoaders(() => domain),
          gate: options.gate,
          onAccountsChanged: () => undefined,
          rateLimitHeadersSet: true,
          events: options.events,
        } as unknown as GraphQLContext;
        // Each event is resolved over a fresh identity map, so nested fields read the current state.
        const clear = contextValue.loaders.clearAll.bind(contextValue.loaders);
        contextValue.loaders.clearAll = () => {
          domain = createDomain(options.orm.em.fork(), options.bans, options.webhooks);
          clear();
        };
        return { schema: options.schema, document, operationName: payload.operationName, variableValues: payload.variables, contextValue };
      },
      onError: (_ctx, _id, _payload, errors) =>
        errors.map((e) => {
          const original = e.originalError;
          if (original instanceof DomainError) return { message: original.message, path: e.path, extensions: extensionsOf(original, undefined) };
          if (e.extensions?.code) return e.toJSON();
          options.logger.error({ err: original ?? e }, 'unexpected GraphQL subscription error');
          return { message: 'Something went wrong on our side.', extensions: { code: 'INTERNAL', status: 500 } };
        }),
      onNext: (_ctx, _id, _payload, _args, result) => {
        if (!result.errors?.length) return;
        return {
          ...result,
          errors: result.errors.map((e) =>
            e.originalError instanceof DomainError
              ? { message: e.originalError.message, path: e.path, extensions: extensionsOf(e.originalError, undefined) }
              : { message: 'Something went wrong on our side.', path: e.path, extensions: { code: 'INTERNAL', status: 500 } },
          ),
        };
      },
      onComplete: (ctx, id) => {
        const ids = counted.get(ctx.extra);
        if (ids?.delete(id)) release(actors.get(ctx.extra)!.accountId);
      },
      onClose: (ctx) => {
        const actor = actors.get(ctx.extra);
        for (const _ of counted.get(ctx.extra) ?? []) if (actor) release(actor.accountId);
        counted.delete(ctx.extra);
      },
    },
    wss,
  );

  return {
    async close() {
      await disposable.dispose();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
