import { Field, ID, Int, ObjectType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import type { AccountView, ApiKeyView, Limits, NewApiKeyView } from '../../../domain/index.js';
import type { PlanName, Role } from '../../../domain/entities/index.js';
import { PlanEnum, RoleEnum } from '../enums.js';
import { connectionType } from '../connection.type.js';
import { ID_DESCRIPTION, NodeInterface } from '../node/node.type.js';

@ObjectType('Limits', { simpleResolvers: true, description: 'Rate limits and caps of an account, shared by all its keys.' })
export class LimitsType implements Limits {
  @Field(() => Int, { description: 'Requests allowed per minute.' })
  perMinute!: number;

  @Field(() => Int, { description: 'Requests allowed per day.' })
  perDay!: number;

  @Field(() => Int, { description: 'Webhook endpoints the account may register.' })
  webhookEndpoints!: number;

  @Field(() => Int, { description: 'GraphQL subscriptions the account may have open at once.' })
  subscriptions!: number;
}

/**
 * The fields of an account but its id. Unnamed and never referenced: `Account` and the types that show an account with
 * more (`Viewer`, `AccountWithKey`) extend it, each with an id of its own (only `Account` is a `Node`).
 */
@ObjectType({ simpleResolvers: true })
abstract class AccountFields implements Omit<AccountView, 'id'> {
  @Field(() => String)
  name!: string;

  @Field(() => RoleEnum)
  role!: Role;

  @Field(() => PlanEnum)
  plan!: PlanName;

  @Field(() => LimitsType)
  limits!: Limits;

  @Field(() => DateTimeResolver)
  createdAt!: Date;
}

@ObjectType('Account', {
  simpleResolvers: true,
  implements: NodeInterface,
  description: 'An account, with its role, plan and effective rate limits.',
})
export class AccountType extends AccountFields implements AccountView {
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: number;
}

@ObjectType('AccountConnection', { simpleResolvers: true, description: 'A page of accounts.' })
export class AccountConnection extends connectionType('Account', AccountType) {}

/** The fields of an API key but its id (see `AccountFields`): `ApiKey` and `NewApiKey` extend it. */
@ObjectType({ simpleResolvers: true })
abstract class ApiKeyFields implements Omit<ApiKeyView, 'accountId' | 'id'> {
  @Field(() => String, { description: 'The first characters of the key, which identify it in lists.' })
  prefix!: string;

  @Field(() => DateTimeResolver)
  createdAt!: Date;

  @Field(() => DateTimeResolver, { nullable: true, description: 'When the key was revoked; null while it is valid.' })
  revokedAt!: Date | null;

  @Field(() => DateTimeResolver, { nullable: true, description: "End of the key's current temporary ban; null when not banned." })
  bannedUntil!: Date | null;
}

@ObjectType('ApiKey', { simpleResolvers: true, implements: NodeInterface, description: 'An API key, without its secret.' })
export class ApiKeyType extends ApiKeyFields implements Omit<ApiKeyView, 'accountId'> {
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: number;
}

const SHOWN_ID = (node: string) =>
  `Global and opaque, this type's own (a normalised cache keeps it apart from the ${node}); every argument that takes the ${node}'s id takes it too.`;

@ObjectType('NewApiKey', { simpleResolvers: true, description: 'A newly created API key with its secret, shown only in this response.' })
export class NewApiKeyType extends ApiKeyFields implements Omit<NewApiKeyView, 'accountId'> {
  @Field(() => ID, { description: SHOWN_ID('ApiKey') })
  id!: number;

  @Field(() => String, { description: 'The full secret key, to send in `X-API-Key`. Shown once; store it safely.' })
  key!: string;
}

@ObjectType('AccountWithKey', {
  simpleResolvers: true,
  description: 'A newly created account with its first API key, secret included (shown once).',
})
export class AccountWithKeyType extends AccountFields implements AccountView {
  @Field(() => ID, { description: SHOWN_ID('Account') })
  id!: number;

  @Field(() => NewApiKeyType)
  apiKey!: NewApiKeyView;
}

@ObjectType('Viewer', {
  simpleResolvers: true,
  description: 'The calling account, with the API key used for this request (without its secret).',
})
export class ViewerType extends AccountFields implements AccountView {
  @Field(() => ID, { description: SHOWN_ID('Account') })
  id!: number;

  @Field(() => ApiKeyType)
  apiKey!: ApiKeyView;
}
