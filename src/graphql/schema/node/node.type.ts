import { Field, FieldResolver, ID, InterfaceType, Resolver, Root, type ClassType } from 'type-graphql';
import { SafeIntResolver } from 'graphql-scalars';
import type { GraphQLSchema } from 'graphql';
import { MapperKind, mapSchema } from '@graphql-tools/utils';
import { globalId, type IdType } from '../../global-id.js';

export const ID_DESCRIPTION =
  'Global and opaque: unique across every type, accepted by `node(id:)` and by every argument that takes this type’s id. Do not parse it.';

@InterfaceType('Node', { description: 'An object with a global id, which `node(id:)` reads again (Relay Global Object Identification).' })
export abstract class NodeInterface {
  /** Sources hold the database id; each type's `id` resolver encodes it. */
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: number | string;
}

/**
 * The `id` and `databaseId` fields of a type whose source objects carry their database id as `id`:
 * a resolver class to list in the schema builder.
 */
export function idFieldsResolver(type: ClassType, name: IdType) {
  ID_TYPES.add(name);
  @Resolver(() => type)
  class IdFieldsResolver {
    @FieldResolver(() => ID, { description: ID_DESCRIPTION })
    id(@Root() root: { id: number }): string {
      return globalId(name, root.id);
    }

    @FieldResolver(() => SafeIntResolver, { description: 'The id of the same object in the REST API (paths such as `/v1/pets/{petId}`).' })
    databaseId(@Root() root: { id: number }): number {
      return root.id;
    }
  }
  return IdFieldsResolver;
}

/** The GraphQL types whose `id` and `databaseId` idFieldsResolver declares (their names are their IdType). */
const ID_TYPES = new Set<IdType>();

/**
 * type-graphql runs each field resolver through its own wrapper (parameters, middlewares); `id` and `databaseId` are
 * read on every object of an answer, so on the built schema they get plain resolvers instead (graphql-tools'
 * mapSchema), answering the same values as the declarations above.
 */
export function plainIdFields(schema: GraphQLSchema): GraphQLSchema {
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
      if (!ID_TYPES.has(typeName as IdType)) return field;
      const type = typeName as IdType;
      if (fieldName === 'id') return { ...field, resolve: (root: { id: number }) => globalId(type, root.id) };
      if (fieldName === 'databaseId') return { ...field, resolve: (root: { id: number }) => root.id };
      return field;
    },
  });
}
