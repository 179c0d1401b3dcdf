import { Field, ID, ObjectType } from 'type-graphql';
import type { CategoryView } from '../../../domain/index.js';
import { connectionType } from '../connection.type.js';
import { ID_DESCRIPTION, NodeInterface } from '../node/node.type.js';

@ObjectType('Category', { simpleResolvers: true, implements: NodeInterface, description: 'A group of pets.' })
export class CategoryType implements CategoryView {
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: number;

  @Field(() => String, { description: "The category's name, unique ignoring case." })
  name!: string;

  @Field(() => String, { nullable: true, description: 'A short description of the category.' })
  description!: string | null;
}

@ObjectType('CategoryConnection', { simpleResolvers: true, description: 'A page of categories.' })
export class CategoryConnection extends connectionType('Category', CategoryType) {}
