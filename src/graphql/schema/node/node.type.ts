import { Field, FieldResolver, ID, InterfaceType, Resolver, Root, type ClassType } from 'type-graphql';
import { SafeIntResolver } from 'graphql-scalars';
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
