import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLContext } from './graphql.context.js';

/**
 * The root fields of a mutation run one after the other, each changing state the next one may read
 * back (`a: setInventory … b: placeOrder … { pet { status } }`). Before each of them the request's
 * DataLoaders forget what they loaded, so every payload's relations are read after its own change.
 */
export function freshLoadersPlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        async executionDidStart({ operation }) {
          // No operation when operationName names none (execution then fails with a 400): nothing to do.
          if (operation?.operation !== 'mutation') return;
          return {
            willResolveField({ info, contextValue }) {
              if (info.path.prev === undefined) contextValue.loaders.clearAll();
            },
          };
        },
      };
    },
  };
}
