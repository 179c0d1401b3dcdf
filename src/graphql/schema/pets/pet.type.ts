import { Field, ID, ObjectType } from 'type-graphql';
import type { PetView } from '../../../domain/index.js';
import type { PetStatus } from '../../../domain/entities/index.js';
import { PetStatusEnum } from '../enums.js';
import { connectionType } from '../connection.type.js';

@ObjectType('Pet', { simpleResolvers: true, description: 'A pet for sale.' })
export class PetType implements PetView {
  @Field(() => ID, { description: 'The same int64 id as REST, as a decimal string.' })
  id!: number;

  @Field(() => String, { description: "The animal's name." })
  name!: string;

  @Field(() => ID, { description: "The pet's category id (the `category` field navigates to it)." })
  categoryId!: number;

  @Field(() => PetStatusEnum)
  status!: PetStatus;
}

@ObjectType('PetConnection', { simpleResolvers: true, description: 'A page of pets.' })
export class PetConnection extends connectionType('Pet', PetType) {}
