import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { CategoryView, InventoryView, PetView } from '../../../domain/index.js';
import { actorOf, domainOf, type GraphQLContext } from '../../context.js';
import { databaseIdOf, optionalDatabaseIdOf } from '../../global-id.js';
import { REFERENCE_IDS } from '../node/node.type.js';
import { PageArgs, paged, type Connection } from '../connection.type.js';
import { PetConnection, PetType } from './pet.type.js';
import { NewPetInput, PetFilterInput } from './pet.input.js';
import { CategoryType } from '../categories/category.type.js';
import { InventoryItemType } from '../store/inventory.type.js';

const petInput = (input: NewPetInput) => ({ ...input, categoryId: databaseIdOf('Category', input.categoryId, 'categoryId') });

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
      categoryId: optionalDatabaseIdOf('Category', filter?.categoryId, 'categoryId'),
      name: filter?.name ?? undefined,
      ids: filter?.ids?.map((id, i) => databaseIdOf('Pet', id, `ids[${i}]`)) ?? undefined,
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
    return domainOf(ctx).pets.getPet(databaseIdOf('Pet', id, 'id'));
  }

  @Mutation(() => PetType, { nullable: true, description: 'Staff: creates a pet with an inventory entry of 1 (REST `POST /pets`).' })
  async createPet(@Arg('input', () => NewPetInput) input: NewPetInput, @Ctx() ctx: GraphQLContext): Promise<PetView> {
    return domainOf(ctx).pets.createPet(actorOf(ctx), petInput(input));
  }

  @Mutation(() => PetType, { nullable: true, description: 'Staff: replaces a pet (REST `PUT /pets/{petId}`).' })
  async updatePet(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => NewPetInput) input: NewPetInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<PetView> {
    return domainOf(ctx).pets.updatePet(actorOf(ctx), databaseIdOf('Pet', id, 'id'), petInput(input));
  }

  @Mutation(() => ID, {
    nullable: true,
    description: 'Staff: deletes a pet without open orders; returns its id (REST `DELETE /pets/{petId}`).',
  })
  async deletePet(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<string> {
    await domainOf(ctx).pets.deletePet(actorOf(ctx), databaseIdOf('Pet', id, 'id'));
    return id;
  }

  @FieldResolver(() => ID, { description: "The `id` of the pet's category (the `category` field navigates to it)." })
  categoryId(@Root() pet: PetView): string {
    return REFERENCE_IDS.Pet.categoryId(pet);
  }

  @FieldResolver(() => CategoryType, {
    description: "The pet's category. In an event's data, a category deleted since is the category as it was when deleted.",
  })
  async category(@Root() pet: PetView, @Ctx() ctx: GraphQLContext): Promise<CategoryView | null> {
    return ctx.loaders.petCategories.load(pet.categoryId);
  }

  @FieldResolver(() => InventoryItemType, { nullable: true, description: "The pet's stock." })
  async inventory(@Root() pet: PetView, @Ctx() ctx: GraphQLContext): Promise<InventoryView | null> {
    return ctx.loaders.inventory.load(pet.id);
  }
}
