import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { CategoryView, InventoryView, PetView } from '../../../domain/index.js';
import { actorOf, domainOf, toId, toIdOrUndefined, type GraphQLContext } from '../../context.js';
import { PageArgs, paged, type Connection } from '../connection.type.js';
import { PetConnection, PetType } from './pet.type.js';
import { NewPetInput, PetFilterInput } from './pet.input.js';
import { CategoryType } from '../categories/category.type.js';
import { InventoryItemType } from '../store/inventory.type.js';

@Resolver(() => PetType)
export class PetResolver {
  @Query(() => PetConnection, { description: 'Pets, filtered, in id order (REST `GET /pets`).' })
  async pets(
    @Arg('filter', () => PetFilterInput, { nullable: true }) filter: PetFilterInput | null,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<Connection<PetView>> {
    const where = {
      status: filter?.status ?? undefined,
      categoryId: toIdOrUndefined(filter?.categoryId),
      name: filter?.name ?? undefined,
      ids: filter?.ids?.map(toId) ?? undefined,
    };
    return paged(
      page,
      (request) => domainOf(ctx).pets.listPets(where, request),
      (p) => p.id,
    );
  }

  @Query(() => PetType, {
    nullable: true,
    description: 'One pet (REST `GET /pets/{petId}`).',
    deprecationReason: 'Use pets(filter: {ids: [...]})',
  })
  async pet(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<PetView> {
    return domainOf(ctx).pets.getPet(toId(id));
  }

  @Mutation(() => PetType, { nullable: true, description: 'Staff: creates a pet with an inventory entry of 1 (REST `POST /pets`).' })
  async createPet(@Arg('input', () => NewPetInput) input: NewPetInput, @Ctx() ctx: GraphQLContext): Promise<PetView> {
    return domainOf(ctx).pets.createPet(actorOf(ctx), input);
  }

  @Mutation(() => PetType, { nullable: true, description: 'Staff: replaces a pet (REST `PUT /pets/{petId}`).' })
  async updatePet(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => NewPetInput) input: NewPetInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<PetView> {
    return domainOf(ctx).pets.updatePet(actorOf(ctx), toId(id), input);
  }

  @Mutation(() => ID, {
    nullable: true,
    description: 'Staff: deletes a pet without open orders; returns its id (REST `DELETE /pets/{petId}`).',
  })
  async deletePet(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<string> {
    await domainOf(ctx).pets.deletePet(actorOf(ctx), toId(id));
    return id;
  }

  @FieldResolver(() => CategoryType, { description: "The pet's category." })
  async category(@Root() pet: PetView, @Ctx() ctx: GraphQLContext): Promise<CategoryView | null> {
    return ctx.loaders.categories.load(pet.categoryId);
  }

  @FieldResolver(() => InventoryItemType, { nullable: true, description: "The pet's stock." })
  async inventory(@Root() pet: PetView, @Ctx() ctx: GraphQLContext): Promise<InventoryView | null> {
    return ctx.loaders.inventory.load(pet.id);
  }
}
