import { Arg, Args, Ctx, Directive, FieldResolver, ID, Int, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { InventoryView, PetView } from '../../../domain/index.js';
import { actorOf, domainOf, type GraphQLContext } from '../../context.js';
import { databaseIdOf } from '../../global-id.js';
import { ID_DESCRIPTION, REFERENCE_IDS } from '../node/node.type.js';
import { PageArgs, paged, type Connection } from '../connection.type.js';
import { InventoryItemConnection, InventoryItemType } from './inventory.type.js';
import { PetType } from '../pets/pet.type.js';
import { BETA } from '../stability.directive.js';

@Resolver(() => InventoryItemType)
export class InventoryResolver {
  @Directive(BETA)
  @Query(() => InventoryItemConnection, { description: 'Staff: the stock of every pet, in pet id order (REST `GET /store/inventory`).' })
  async inventory(@Args(() => PageArgs) page: PageArgs, @Ctx() ctx: GraphQLContext): Promise<Connection<InventoryView>> {
    return paged(
      page,
      (request) => domainOf(ctx).store.listInventory(actorOf(ctx), request),
      (i) => i.petId,
    );
  }

  @Query(() => InventoryItemType, { nullable: true, description: "One pet's stock (REST `GET /store/inventory/{petId}`)." })
  async inventoryItem(@Arg('petId', () => ID) petId: string, @Ctx() ctx: GraphQLContext): Promise<InventoryView> {
    return domainOf(ctx).store.getInventory(databaseIdOf('Pet', petId, 'petId'));
  }

  @Directive(BETA)
  @Mutation(() => InventoryItemType, {
    nullable: true,
    description: "Staff: sets a pet's stock, 0 to 1000000, and with it the pet's status (REST `PUT /store/inventory/{petId}`).",
  })
  async setInventory(
    @Arg('petId', () => ID) petId: string,
    @Arg('quantity', () => Int) quantity: number,
    @Ctx() ctx: GraphQLContext,
  ): Promise<InventoryView> {
    return domainOf(ctx).store.setInventory(actorOf(ctx), databaseIdOf('Pet', petId, 'petId'), quantity);
  }

  @FieldResolver(() => ID, { description: ID_DESCRIPTION })
  id(@Root() item: InventoryView): string {
    return REFERENCE_IDS.InventoryItem.id(item);
  }

  @FieldResolver(() => ID, { description: 'The `id` of the pet this stock belongs to.' })
  petId(@Root() item: InventoryView): string {
    return REFERENCE_IDS.InventoryItem.petId(item);
  }

  @FieldResolver(() => PetType, { nullable: true, description: 'The pet this stock belongs to.' })
  async pet(@Root() item: InventoryView, @Ctx() ctx: GraphQLContext): Promise<PetView | null> {
    return ctx.loaders.pets.load(item.petId);
  }
}
