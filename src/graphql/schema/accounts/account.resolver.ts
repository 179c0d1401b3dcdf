import { Arg, Args, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import type { AccountView, ApiKeyView, NewApiKeyView } from '../../../domain/index.js';
import { actorOf, domainOf, type GraphQLContext } from '../../context.js';
import { databaseIdOf } from '../../global-id.js';
import { PageArgs, paged, type Connection } from '../connection.type.js';
import { AccountConnection, AccountType, AccountWithKeyType, ApiKeyType, NewApiKeyType, ViewerType } from './account.type.js';
import { AccountUpdateInput, NewAccountInput } from './account.input.js';

@Resolver(() => AccountType)
export class AccountResolver {
  @Query(() => ViewerType, { description: 'The calling account and the key of this request (REST `GET /account`).' })
  async viewer(@Ctx() ctx: GraphQLContext): Promise<AccountView & { apiKey: ApiKeyView }> {
    return domainOf(ctx).accounts.viewer(actorOf(ctx));
  }

  @Query(() => AccountConnection, { description: 'Staff: accounts in id order (REST `GET /accounts`).' })
  async accounts(@Args(() => PageArgs) page: PageArgs, @Ctx() ctx: GraphQLContext): Promise<Connection<AccountView>> {
    return paged(
      page,
      (request) => domainOf(ctx).accounts.listAccounts(actorOf(ctx), request),
      (a) => a.id,
    );
  }

  @Query(() => [ApiKeyType], {
    description:
      "Staff: an account's keys, revoked ones included, oldest first; never their secrets (REST `GET /accounts/{accountId}/api-keys`).",
  })
  async apiKeys(@Arg('accountId', () => ID) accountId: string, @Ctx() ctx: GraphQLContext): Promise<ApiKeyView[]> {
    return domainOf(ctx).accounts.listApiKeys(actorOf(ctx), databaseIdOf('Account', accountId, 'accountId'));
  }

  @Mutation(() => AccountWithKeyType, {
    nullable: true,
    description: 'Staff: creates an account and its first key, whose secret is shown only here (REST `POST /accounts`).',
  })
  async createAccount(
    @Arg('input', () => NewAccountInput) input: NewAccountInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<AccountView & { apiKey: NewApiKeyView }> {
    return domainOf(ctx).accounts.createAccount(actorOf(ctx), input);
  }

  @Mutation(() => AccountType, {
    nullable: true,
    description: "Staff: changes an account's name, role, plan or limits (REST `PATCH /accounts/{accountId}`).",
  })
  async updateAccount(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => AccountUpdateInput) input: AccountUpdateInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<AccountView> {
    return domainOf(ctx).accounts.updateAccount(actorOf(ctx), databaseIdOf('Account', id, 'id'), { ...input });
  }

  @Mutation(() => NewApiKeyType, {
    nullable: true,
    description: 'Staff: adds a key to an account; its secret is shown only here (REST `POST /accounts/{accountId}/api-keys`).',
  })
  async createApiKey(@Arg('accountId', () => ID) accountId: string, @Ctx() ctx: GraphQLContext): Promise<NewApiKeyView> {
    return domainOf(ctx).accounts.createApiKey(actorOf(ctx), databaseIdOf('Account', accountId, 'accountId'));
  }

  @Mutation(() => ApiKeyType, { nullable: true, description: 'Staff: revokes a key at once (REST `DELETE /api-keys/{keyId}`).' })
  async revokeApiKey(@Arg('keyId', () => ID) keyId: string, @Ctx() ctx: GraphQLContext): Promise<ApiKeyView> {
    return domainOf(ctx).accounts.revokeApiKey(actorOf(ctx), databaseIdOf('ApiKey', keyId, 'keyId'));
  }

  @Mutation(() => ID, {
    nullable: true,
    description: "Staff: lifts a key's temporary ban; returns the key id (REST `DELETE /api-keys/{keyId}/ban`).",
  })
  async liftBan(@Arg('keyId', () => ID) keyId: string, @Ctx() ctx: GraphQLContext): Promise<string> {
    await domainOf(ctx).accounts.liftBan(actorOf(ctx), databaseIdOf('ApiKey', keyId, 'keyId'));
    return keyId;
  }
}
