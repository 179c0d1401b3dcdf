import 'reflect-metadata';
import { lexicographicSortSchema, type GraphQLSchema } from 'graphql';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { buildSchema } from 'type-graphql';
import { stabilityDirective } from './stability.directive.js';
import { PetResolver } from './pet.resolver.js';
import { CategoryResolver } from './category.resolver.js';
import { OrderResolver } from './order.resolver.js';
import { InventoryResolver } from './inventory.resolver.js';
import { AccountResolver } from './account.resolver.js';
import { RateLimitResolver } from './rate-limit.resolver.js';
import { EventResolver } from './event.resolver.js';
import { WebhookResolver } from './webhook.resolver.js';
import { SubscriptionResolver } from './subscription.resolver.js';

export const SCHEMA_FILE = 'schema/schema.graphql';

/** The executable schema, built from the type-graphql classes of this folder. */
export function buildGraphQLSchema(): Promise<GraphQLSchema> {
  return buildSchema({
    resolvers: [PetResolver, CategoryResolver, OrderResolver, InventoryResolver, AccountResolver, RateLimitResolver, EventResolver, WebhookResolver, SubscriptionResolver],
    directives: [stabilityDirective],
    validate: false,
    // Every subscription brings its own `subscribe` (reading the outbox, src/graphql/subscription.resolver.ts);
    // type-graphql still wants a PubSub to exist, and none is used.
    pubSub: {
      publish: () => undefined,
      subscribe: () => {
        throw new Error('Subscriptions here have their own subscribe function.');
      },
    } as unknown as NonNullable<Parameters<typeof buildSchema>[0]['pubSub']>,
  });
}

/** The committed SDL (`schema/schema.graphql`): sorted, with applied directives such as `@stability`. */
export function printGraphQLSchema(schema: GraphQLSchema): string {
  const header = '# Generated from src/graphql by `npm run schema:graphql`; do not edit by hand.\n\n';
  return `${header}${printSchemaWithDirectives(lexicographicSortSchema(schema))}\n`;
}
