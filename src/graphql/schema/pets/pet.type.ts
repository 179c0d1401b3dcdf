import { Field, ID, ObjectType } from 'type-graphql';
import type { PetView } from '../../../domain/index.js';
import type { PetStatus } from '../../../domain/entities/index.js';
import { PetStatusEnum } from '../enums.js';
import { connectionType } from '../connection.type.js';
import { ID_DESCRIPTION, NodeInterface } from '../node/node.type.js';

@ObjectType('Pet', { simpleResolvers: true, implements: NodeInterface, description: 'A pet for sale.' })
export class PetType implements PetView {
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: number;

  @Field(() => String, { description: "The animal's name." })
  name!: string;

  @Field(() => ID, { description: "The `id` of the pet's category (the `category` field navigates to it)." })
  categoryId!: number;

  @Field(() => PetStatusEnum)
  status!: PetStatus;
}

@ObjectType('PetConnection', { simpleResolvers: true, description: 'A page of pets.' })
export class PetConnection extends connectionType('Pet', PetType) {}
