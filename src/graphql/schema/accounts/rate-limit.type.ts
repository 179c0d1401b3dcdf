import { DateTimeResolver } from 'graphql-scalars';
import { Field, Int, ObjectType } from 'type-graphql';
import type { PlanName } from '../../../domain/entities/index.js';
import type { RateLimitStatus, WindowUsage } from '../../../rate-limit/gate.js';
import { PlanEnum } from '../enums.js';

@ObjectType('RateLimitWindow', { simpleResolvers: true, description: 'Usage of one rate-limit window.' })
export class RateLimitWindowType implements WindowUsage {
  @Field(() => Int, { description: 'Requests allowed in the window.' })
  limit!: number;

  @Field(() => Int, { description: 'Requests counted in the current window.' })
  used!: number;

  @Field(() => Int, { description: 'Requests left in the current window.' })
  remaining!: number;

  @Field(() => Int, { description: 'Unix time, in seconds, at which the current window resets.' })
  reset!: number;

  @Field(() => Int, { description: 'Length of the window in seconds.' })
  windowSeconds!: number;
}

@ObjectType('RateLimitResources', { simpleResolvers: true, description: 'Both windows of the account.' })
export class RateLimitResourcesType {
  @Field(() => RateLimitWindowType)
  minute!: WindowUsage;

  @Field(() => RateLimitWindowType)
  day!: WindowUsage;
}

@ObjectType('RateLimit', {
  simpleResolvers: true,
  description: "The calling account's plan and the usage of both of its windows, and the calling key's ban.",
})
export class RateLimitType implements RateLimitStatus {
  @Field(() => PlanEnum)
  plan!: PlanName;

  @Field(() => RateLimitResourcesType)
  resources!: RateLimitStatus['resources'];

  @Field(() => DateTimeResolver, {
    nullable: true,
    description:
      "End of the calling key's ban (a key that kept sending while limited); null when it is not banned. A key known to be banned is refused (API_KEY_BANNED, with Retry-After) before its GraphQL is read: REST `GET /rate_limit` is where it reads this.",
  })
  bannedUntil!: Date | null;
}
