import { MapperKind, mapSchema } from '@graphql-tools/utils';
import type { GraphQLSchema } from 'graphql';
import type { GraphQLContext } from '../context.js';

/**
 * The root fields of a mutation run one after the other, each changing state the next one may read
 * back (`a: setInventory … b: placeOrder … { pet { status } }`). Before each of them the request's
 * DataLoaders forget what they loaded, so every payload's relations are read after its own change.
 *
 * Done on the built schema's root mutation resolvers (graphql-tools' mapSchema), whichever executor runs them: an
 * Apollo `willResolveField` hook would make Apollo wrap every resolver of the schema, queries' included.
 */
export function freshLoadersPerMutationField(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.MUTATION_ROOT_FIELD]: (field) => {
      const resolve = field.resolve;
      if (!resolve) return field;
      return {
        ...field,
        resolve: (source, args, context: GraphQLContext, info) => {
          context.loaders.clearAll();
          return resolve(source, args, context, info);
        },
      };
    },
  });
}
