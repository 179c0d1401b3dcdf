import type { ApolloServerPlugin } from '@apollo/server';
import { validationFailed } from '../domain/errors.js';
import { authError } from '../http/authentication.js';
import { graphqlCost, type RateLimitGate } from '../rate-limit/index.js';
import type { GraphQLContext } from './graphql.context.js';
import { toRequestError } from './error.mapping.js';
import { cachedOperationShape, coerceVariables } from './operation-shape.js';

/** What the answer's `extensions.cost` shows. */
export interface OperationCost {
  /** The operation's cost under the shared policy, read with the request's variables. */
  requested: number;
  /** Points taken: from the account's budget with a key, from the per-address limiter (1) without. */
  charged: number;
}

/**
 * Size ceiling, cost and rate limiting of GraphQL requests (SPEC §5, §6), once Apollo has resolved
 * the operation and before any resolver runs. The operation is read with its coerced variables, so
 * a size is the same whether it is written literally, passed as a variable or taken from a default.
 * Over `maxNodes` (estimated result fields) the request is refused with 400 and charged nothing;
 * otherwise a keyed caller is charged the operation's cost, and a keyless one pays 1 to the
 * per-address limiter and, unless it only introspects, is refused with 401.
 */
export function rateLimitPlugin(gate: RateLimitGate, { maxNodes }: { maxNodes: number }): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      let cost: OperationCost | undefined;
      return {
        async didResolveOperation({ contextValue: ctx, operation, operationName, document, schema, request, response }) {
          if (operationName) ctx.observed.operationName = operationName;
          if (!operation) return;
          // The schema has no subscriptions; without this check graphql-js fails at execution (a 500).
          if (operation.operation === 'subscription') {
            throw toRequestError(validationFailed('Subscriptions run over the graphql-ws protocol (a WebSocket to /graphql, key in connection_init); use POST for queries and mutations.'));
          }
          const coerced = coerceVariables(schema, operation, request.variables);
          // Variables that do not fit the operation: execution refuses the request with their errors (400)
          // before any resolver runs, like an invalid document, and it costs nothing.
          if (!('variables' in coerced)) return;
          const shape = cachedOperationShape(schema, document, operation, coerced.variables, maxNodes);
          // The same walk names the operation for metrics: a bounded label from the schema's own field names.
          ctx.observed.operation = operationLabel(operation.operation, shape.rootFields);
          if (shape.overCeiling) {
            throw toRequestError(
              validationFailed(
                `Query size limit of ${maxNodes} exceeded: the answer could hold more than ${maxNodes} fields. Ask for smaller pages (first) or fewer nested lists.`,
              ),
            );
          }
          const requested = graphqlCost(shape);
          const { actor, authFailure } = ctx;
          let headers: Record<string, string>;
          try {
            // Without a valid key every request, introspection included, takes a point from the address's limiter.
            headers = actor ? await gate.charge(actor, requested) : await gate.anonymous(ctx.clientAddress, true);
          } catch (error) {
            // A refusal carries its own headers (the rate-limit headers and Retry-After).
            throw toRequestError(error);
          }
          for (const [name, value] of Object.entries(headers)) response.http.headers.set(name.toLowerCase(), value);
          cost = { requested, charged: actor ? requested : 1 };
          if (!actor && (shape.needsKey || authFailure === 'UNAVAILABLE')) {
            throw toRequestError(authError(authFailure));
          }
        },
        async willSendResponse({ response }) {
          if (!cost || response.body.kind !== 'single') return;
          const result = response.body.singleResult;
          // A request refused as a whole (401) shows no cost; an executed one does, errors or not.
          if (result.data === undefined) return;
          result.extensions = { ...result.extensions, cost };
        },
      };
    },
  };
}

/** `query pets`, `mutation placeOrder`, or `query (several fields)`: never client input such as the operation name. */
function operationLabel(type: string, rootFields: readonly string[]): string {
  const names = new Set(rootFields);
  return `${type} ${names.size === 1 ? [...names][0]! : names.size === 0 ? '(none)' : '(several fields)'}`;
}
