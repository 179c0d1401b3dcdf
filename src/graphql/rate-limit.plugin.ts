import { Kind, type DocumentNode, type FragmentDefinitionNode, type OperationDefinitionNode, type SelectionSetNode } from 'graphql';
import type { ApolloServerPlugin } from '@apollo/server';
import { DomainError } from '../domain/errors.js';
import { asDomainError } from '../http/errors.js';
import { FREE_GRAPHQL_ROOT_FIELDS, type RateLimitGate } from '../rate-limit/gate.js';
import type { GraphQLContext } from './graphql.context.js';
import { toRequestError } from './error.mapping.js';

const INTROSPECTION = new Set(['__schema', '__type', '__typename']);
/** Root fields that cost nothing: the policy shared with REST. `rateLimit` still needs a key. */
const FREE = FREE_GRAPHQL_ROOT_FIELDS;

/**
 * The root fields the operation executes, by response key: `a: pets, b: pets` is two, `pets pets`
 * is one (GraphQL merges them), and fragments at the root are followed.
 */
export function rootFieldsOf(operation: OperationDefinitionNode, document: DocumentNode): Map<string, string> {
  const fragments = new Map(
    document.definitions.filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION).map((f) => [f.name.value, f]),
  );
  const fields = new Map<string, string>();
  const seen = new Set<string>();
  const walk = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) fields.set(selection.alias?.value ?? selection.name.value, selection.name.value);
      else if (selection.kind === Kind.INLINE_FRAGMENT) walk(selection.selectionSet);
      else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) walk(fragment.selectionSet);
      }
    }
  };
  walk(operation.selectionSet);
  return fields;
}

/** Cost of an operation: 1 per root field (aliases count), introspection and `rateLimit` free. */
export function operationCost(operation: OperationDefinitionNode, document: DocumentNode): { cost: number; needsKey: boolean } {
  const names = [...rootFieldsOf(operation, document).values()];
  return { cost: names.filter((n) => !FREE.has(n)).length, needsKey: names.some((n) => !INTROSPECTION.has(n)) };
}

/**
 * Authentication and rate limiting of GraphQL requests (SPEC §5, §6), once the operation is known and
 * before any resolver runs: a keyed caller is charged the operation's cost; a keyless one goes
 * through the per-address limiter and, unless it only introspects, is refused with 401.
 */
export function rateLimitPlugin(gate: RateLimitGate): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ contextValue: ctx, operation, operationName, document }) {
          if (operationName) ctx.state.operationName = operationName;
          // The schema has no subscriptions; without this check graphql-js fails at execution (a 500).
          if (operation?.operation === 'subscription') {
            throw toRequestError(new DomainError('VALIDATION_FAILED', 'Subscriptions run over the graphql-ws protocol (a WebSocket to /graphql, key in connection_init); use POST for queries and mutations.'));
          }
          const { cost, needsKey } = operation ? operationCost(operation, document) : { cost: 0, needsKey: false };
          const { actor, authFailure } = ctx.state;
          try {
            const headers = actor ? await gate.charge(actor, cost) : await gate.anonymous(ctx.koa.ip, authFailure === 'INVALID_API_KEY');
            ctx.koa.set(headers);
            ctx.rateLimitHeadersSet = true;
          } catch (error) {
            const known = asDomainError(error);
            if (!known) throw error;
            ctx.rateLimitHeadersSet = true;
            throw toRequestError(known);
          }
          if (!actor && needsKey) {
            throw toRequestError(
              authFailure === 'INVALID_API_KEY'
                ? new DomainError('INVALID_API_KEY', 'The API key is unknown or revoked.')
                : new DomainError('UNAUTHENTICATED', 'Send your API key in the X-API-Key header.'),
            );
          }
        },
      };
    },
  };
}
