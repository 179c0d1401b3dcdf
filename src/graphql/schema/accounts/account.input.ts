import { Field, InputType, Int } from 'type-graphql';
import type { PlanName, Role } from '../../../domain/entities/index.js';
import type { AccountInput } from '../../../domain/accounts.service.js';
import { PlanEnum, RoleEnum } from '../enums.js';

@InputType('LimitsInput', {
  description: 'Custom rate limits and caps; only for (and required by) the enterprise plan (REST `LimitsInput`).',
})
export class LimitsInput {
  @Field(() => Int)
  perMinute!: number;

  @Field(() => Int)
  perDay!: number;

  @Field(() => Int, {
    nullable: true,
    description:
      "Webhook endpoints the account may register (0..1000). Left out: the account's current cap (at first the business plan's, 20); null: back to that.",
  })
  webhookEndpoints?: number | null;

  @Field(() => Int, {
    nullable: true,
    description:
      "GraphQL subscriptions the account may have open at once (0..10000). Left out: the account's current cap (at first the business plan's, 50); null: back to that.",
  })
  subscriptions?: number | null;
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
