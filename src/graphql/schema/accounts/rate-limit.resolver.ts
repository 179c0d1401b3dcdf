import { Ctx, Query, Resolver } from 'type-graphql';
import type { RateLimitGate, RateLimitStatus } from '../../../rate-limit/gate.js';
import { actorOf, type GraphQLContext } from '../../context.js';
import { RateLimitType } from './rate-limit.type.js';

@Resolver(() => RateLimitType)
export class RateLimitResolver {
  constructor(private readonly gate: Pick<RateLimitGate, 'status'>) {}

  @Query(() => RateLimitType, { description: "Usage of both of the account's windows; costs nothing (REST `GET /rate_limit`)." })
  async rateLimit(@Ctx() ctx: GraphQLContext): Promise<RateLimitStatus> {
    return this.gate.status(actorOf(ctx));
  }
}
