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

/** The two id fields of a type whose source objects carry their database id as `id`: declared and served by these. */
const idResolvers = (name: IdType) => ({
  id: (root: { id: number }): string => globalId(name, root.id),
  databaseId: (root: { id: number }): number => root.id,
});

/**
 * The `id` and `databaseId` fields of a type whose source objects carry their database id as `id`:
 * a resolver class to list in the schema builder (it declares the fields; plainIdFields serves them).
 */
export function idFieldsResolver(type: ClassType, name: IdType) {
  const resolve = idResolvers(name);
  @Resolver(() => type)
  class IdFieldsResolver {
    @FieldResolver(() => ID, { description: ID_DESCRIPTION })
    id(@Root() root: { id: number }): string {
      return resolve.id(root);
    }

    @FieldResolver(() => SafeIntResolver, { description: 'The id of the same object in the REST API (paths such as `/v1/pets/{petId}`).' })
    databaseId(@Root() root: { id: number }): number {
      return resolve.databaseId(root);
    }
  }
  return IdFieldsResolver;
}

/**
 * The fields that hold another object's id, by type: each type-graphql field resolver that declares one returns
 * what its function here does, and plainIdFields serves the function itself.
 */
export const REFERENCE_IDS = {
  Pet: { categoryId: (pet: { categoryId: number }) => globalId('Category', pet.categoryId) },
  Order: { petId: (order: { petId: number | null }) => (order.petId === null ? null : globalId('Pet', order.petId)) },
  InventoryItem: {
    id: (item: { petId: number }) => globalId('InventoryItem', item.petId),
    petId: (item: { petId: number }) => globalId('Pet', item.petId),
  },
  WebhookDelivery: {
    webhookId: (delivery: { webhookId: number }) => globalId('WebhookEndpoint', delivery.webhookId),
    eventId: (delivery: { eventId: number }) => globalId('Event', delivery.eventId),
  },
} as const;

type PlainResolver = (root: never) => unknown;

/**
 * type-graphql runs each field resolver through its own wrapper (parameters, middlewares); the id fields (`id`,
 * `databaseId` of the `types` given, and REFERENCE_IDS) are read on every object of an answer, so on the built
 * schema they get the same functions unwrapped (graphql-tools' mapSchema).
 */
export function plainIdFields(schema: GraphQLSchema, types: readonly IdType[]): GraphQLSchema {
  const byType = new Map<string, Readonly<Record<string, PlainResolver>>>(Object.entries(REFERENCE_IDS));
  for (const name of types) byType.set(name, { ...byType.get(name), ...idResolvers(name) });
  return mapSchema(schema, {
    [MapperKind.OBJECT_FIELD]: (field, fieldName, typeName) => {
      const resolve = byType.get(typeName)?.[fieldName];
      return resolve ? { ...field, resolve: resolve as (root: unknown) => unknown } : field;
    },
  });
}
