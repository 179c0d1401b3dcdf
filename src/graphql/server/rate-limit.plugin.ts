import type { ApolloServerPlugin } from '@apollo/server';
import type { DocumentNode, GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { validationFailed } from '../../domain/errors.js';
import { keyRefusal } from '../../http/authentication.js';
import { graphqlCost, type RateLimitGate } from '../../rate-limit/index.js';
import type { GraphQLContext } from '../context.js';
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
          const priced = priceOperation(schema, document, operation, request.variables, maxNodes);
          // Variables that do not fit the operation: execution refuses the request with their errors (400)
          // before any resolver runs, like an invalid document, and it costs nothing.
          if (priced.refused === 'variables') return;
          // The same walk names the operation for metrics: a bounded label from the schema's own field names.
          ctx.observed.operation = priced.label;
          if (priced.refused === 'size') {
            throw toRequestError(
              validationFailed(
                `Query size limit of ${maxNodes} exceeded: the answer could hold more than ${maxNodes} fields. Ask for smaller pages (first) or fewer nested lists.`,
              ),
            );
          }
          const { requested, needsKey } = priced;
          const { actor, authFailure } = ctx;
          let headers: Record<string, string>;
          try {
            // Without a valid key every request, introspection included, takes a point from the address's limiter.
            // The fast path may have charged this request already (then it answers through Apollo): that charge counts, once.
            headers = actor ? await takeCharge(ctx, requested, () => gate.charge(actor, requested)) : await gate.anonymous(ctx.clientAddress, true);
          } catch (error) {
            // A refusal carries its own headers (the rate-limit headers and Retry-After).
            throw toRequestError(error);
          }
          for (const [name, value] of Object.entries(headers)) response.http.headers.set(name.toLowerCase(), value);
          cost = { requested, charged: actor ? requested : 1 };
          const refusal = actor ? undefined : keyRefusal(authFailure, needsKey);
          if (refusal) throw toRequestError(refusal);
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

/** What the cost analysis says of an operation with the request's variables. */
export type OperationPrice =
  /** The variables do not fit the operation: execution refuses them (400), nothing is charged. */
  | { refused: 'variables' }
  /** Over the size ceiling: refused (400), nothing charged; `label` names the operation for metrics. */
  | { refused: 'size'; label: string }
  | { refused?: undefined; label: string; requested: number; needsKey: boolean };

/**
 * The operation's price under the shared policy, read with its coerced variables (the shape is cached per
 * operation and per key of the variables that can change it). One function for Apollo's pipeline (the plugin
 * above) and the fast path (fast-path.ts), so both price a request alike.
 */
export function priceOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Record<string, unknown> | undefined,
  maxNodes: number,
): OperationPrice {
  const coerced = coerceVariables(schema, operation, variables);
  if (!('variables' in coerced)) return { refused: 'variables' };
  const shape = cachedOperationShape(schema, document, operation, coerced.variables, maxNodes);
  const label = operationLabel(operation.operation, shape.rootFields);
  if (shape.overCeiling) return { refused: 'size', label };
  return { label, requested: graphqlCost(shape), needsKey: shape.needsKey };
}

/**
 * A charge the fast path made before handing the request to Apollo (its answer needed Apollo after all:
 * the charge was refused, or the result has errors). Taken once, for the same cost; otherwise `charge` runs.
 */
async function takeCharge(ctx: GraphQLContext, requested: number, charge: () => Promise<Record<string, string>>): Promise<Record<string, string>> {
  const charged = ctx.charged;
  // The fast path priced the same document and variables with the same priceOperation: its charge is this one.
  if (!charged) return charge();
  ctx.charged = undefined;
  if ('error' in charged) throw charged.error;
  return charged.headers;
}

/** `query pets`, `mutation placeOrder`, or `query (several fields)`: never client input such as the operation name. */
function operationLabel(type: string, rootFields: readonly string[]): string {
  const names = new Set(rootFields);
  return `${type} ${names.size === 1 ? [...names][0]! : names.size === 0 ? '(none)' : '(several fields)'}`;
}
