import type { ApolloServerPlugin } from '@apollo/server';
import { Kind, type SelectionSetNode } from 'graphql';
import type { GraphQLContext } from './graphql.context.js';

/**
 * Names the executed GraphQL operation for metrics with a bounded label: its type and its root field
 * (`query pets`, `mutation placeOrder`), or `query (several fields)`. Runs once the document is valid
 * against the schema, so the names are the schema's, never client input such as the operation name.
 */
export function operationLabelPlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async didResolveOperation({ contextValue, operation }) {
          if (!operation) return;
          const fields = new Set<string>();
          collect(operation.selectionSet, fields, 0);
          const label = fields.size === 1 ? [...fields][0]! : fields.size === 0 ? '(none)' : '(several fields)';
          contextValue.observed.operation = `${operation.operation} ${label}`;
        },
      };
    },
  };
}

/** Root field names; inline fragments are followed, named fragments count as several fields (no lookup needed). */
function collect(set: SelectionSetNode, into: Set<string>, depth: number) {
  for (const s of set.selections) {
    if (s.kind === Kind.FIELD) into.add(s.name.value);
    else if (s.kind === Kind.INLINE_FRAGMENT && depth < 10) collect(s.selectionSet, into, depth + 1);
    else into.add('...');
  }
}
