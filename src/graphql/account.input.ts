import { Field, InputType, Int } from 'type-graphql';
import type { PlanName, Role } from '../domain/entities/index.js';
import type { AccountInput } from '../domain/accounts.service.js';
import { PlanEnum, RoleEnum } from './enums.js';

@InputType('LimitsInput', { description: 'Custom rate limits; only for (and required by) the enterprise plan.' })
export class LimitsInput {
  @Field(() => Int)
  perMinute!: number;

  @Field(() => Int)
  perDay!: number;
}

@InputType('NewAccountInput', { description: 'An account to create (REST `NewAccount`).' })
export class NewAccountInput implements AccountInput {
  @Field(() => String)
  name!: string;

  @Field(() => RoleEnum)
  role!: Role;

  @Field(() => PlanEnum)
  plan!: PlanName;

  @Field(() => LimitsInput, { nullable: true })
  limits?: LimitsInput | null;
}

@InputType('AccountUpdateInput', { description: 'Changes to an account; at least one field (REST `AccountUpdate`).' })
export class AccountUpdateInput implements AccountInput {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => RoleEnum, { nullable: true })
  role?: Role;

  @Field(() => PlanEnum, { nullable: true })
  plan?: PlanName;

  @Field(() => LimitsInput, { nullable: true })
  limits?: LimitsInput | null;
}
