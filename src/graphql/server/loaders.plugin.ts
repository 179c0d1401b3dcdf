import type { GraphQLSchema } from 'graphql';
import type { GraphQLContext } from '../context.js';

/**
 * The root fields of a mutation run one after the other, each changing state the next one may read
 * back (`a: setInventory … b: placeOrder … { pet { status } }`). Before each of them the request's
 * DataLoaders forget what they loaded, so every payload's relations are read after its own change.
 *
 * Done by wrapping the schema's root mutation resolvers once, whichever executor runs them (an Apollo
 * `willResolveField` hook did it before: it made Apollo wrap every resolver of the schema, queries' included,
 * from the first mutation on, and graphql-jit compiles the resolvers it finds).
 */
export function freshLoadersPerMutationField(schema: GraphQLSchema): void {
  const mutation = schema.getMutationType();
  if (!mutation) return;
  for (const field of Object.values(mutation.getFields())) {
    const resolve = field.resolve;
    if (!resolve) continue;
    field.resolve = (source, args, context: GraphQLContext, info) => {
      context.loaders.clearAll();
      return resolve(source, args, context, info);
    };
  }
}
