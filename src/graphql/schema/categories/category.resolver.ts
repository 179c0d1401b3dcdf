import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { CategoryView, PetView } from '../../../domain/index.js';
import { actorOf, domainOf, type GraphQLContext } from '../../context.js';
import { databaseIdOf } from '../../global-id.js';
import { PageArgs, paged, type Connection } from '../connection.type.js';
import { CategoryConnection, CategoryType } from './category.type.js';
import { NewCategoryInput } from './category.input.js';
import { PetConnection } from '../pets/pet.type.js';

@Resolver(() => CategoryType)
export class CategoryResolver {
  @Query(() => CategoryConnection, { description: 'Categories in id order (REST `GET /categories`).' })
  async categories(@Args(() => PageArgs) page: PageArgs, @Ctx() ctx: GraphQLContext): Promise<Connection<CategoryView>> {
    return paged(
      page,
      (request) => domainOf(ctx).categories.listCategories(request),
      (c) => c.id,
    );
  }

  @Query(() => CategoryType, { nullable: true, description: 'One category (REST `GET /categories/{categoryId}`).' })
  async category(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<CategoryView> {
    return domainOf(ctx).categories.getCategory(databaseIdOf('Category', id, 'id'));
  }

  @Mutation(() => CategoryType, { nullable: true, description: 'Staff: creates a category (REST `POST /categories`).' })
  async createCategory(@Arg('input', () => NewCategoryInput) input: NewCategoryInput, @Ctx() ctx: GraphQLContext): Promise<CategoryView> {
    return domainOf(ctx).categories.createCategory(actorOf(ctx), input);
  }

  @Mutation(() => CategoryType, { nullable: true, description: 'Staff: replaces a category (REST `PUT /categories/{categoryId}`).' })
  async updateCategory(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => NewCategoryInput) input: NewCategoryInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<CategoryView> {
    return domainOf(ctx).categories.updateCategory(actorOf(ctx), databaseIdOf('Category', id, 'id'), input);
  }

  @Mutation(() => ID, {
    nullable: true,
    description: 'Staff: deletes a category no pet belongs to; returns its id (REST `DELETE /categories/{categoryId}`).',
  })
  async deleteCategory(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<string> {
    await domainOf(ctx).categories.deleteCategory(actorOf(ctx), databaseIdOf('Category', id, 'id'));
    return id;
  }

  @FieldResolver(() => PetConnection, { description: 'The pets of this category, in id order.' })
  async pets(
    @Root() category: CategoryView,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<Connection<PetView>> {
    return paged(
      page,
      (request) => ctx.loaders.petsOfCategory(request).load(category.id),
      (p) => p.id,
    );
  }
}
