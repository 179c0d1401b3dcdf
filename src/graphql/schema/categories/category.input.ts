import { Field, InputType } from 'type-graphql';
import type { CategoryInput } from '../../../domain/categories.service.js';

@InputType('NewCategoryInput', { description: 'A category to create, or the full replacement of one (REST `NewCategory`).' })
export class NewCategoryInput implements CategoryInput {
  @Field(() => String, { description: '1 to 100 characters after trimming; unique ignoring case.' })
  name!: string;

  @Field(() => String, { nullable: true, description: 'At most 1000 characters.' })
  description?: string | null;
}
