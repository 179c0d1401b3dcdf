import { Field, ID, InputType } from 'type-graphql';
import type { PetStatus } from '../../../domain/entities/index.js';
import type { PetInput } from '../../../domain/pets.service.js';
import { PetStatusEnum } from '../enums.js';

@InputType('NewPetInput', { description: 'A pet to create, or the full replacement of one (REST `NewPet`).' })
export class NewPetInput implements PetInput {
  @Field(() => String, { description: "The animal's name, 1 to 100 characters after trimming." })
  name!: string;

  @Field(() => ID, { description: 'An existing category.' })
  categoryId!: string;

  @Field(() => PetStatusEnum, { nullable: true, description: 'Defaults to `available` on create; omitted on update, unchanged.' })
  status?: PetStatus | null;
}

@InputType('PetFilter', { description: 'Filters of `pets`; all given ones must match.' })
export class PetFilterInput {
  @Field(() => PetStatusEnum, { nullable: true })
  status?: PetStatus | null;

  @Field(() => ID, { nullable: true })
  categoryId?: string | null;

  @Field(() => String, { nullable: true, description: 'Case-insensitive substring of the name.' })
  name?: string | null;

  @Field(() => [ID], { nullable: true, description: 'At most 100 ids; unknown ids are simply absent from the result.' })
  ids?: string[] | null;
}
