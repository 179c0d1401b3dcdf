import 'reflect-metadata';
import { lexicographicSortSchema, specifiedDirectives, type GraphQLSchema } from 'graphql';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { buildSchema, type ClassType } from 'type-graphql';
import type { RateLimitGate } from '../../rate-limit/gate.js';
import { stabilityDirective } from './stability.directive.js';
import { PetResolver } from './pets/pet.resolver.js';
import { CategoryResolver } from './categories/category.resolver.js';
import { OrderResolver } from './store/order.resolver.js';
import { InventoryResolver } from './store/inventory.resolver.js';
import { AccountResolver } from './accounts/account.resolver.js';
import { RateLimitResolver } from './accounts/rate-limit.resolver.js';
import { EventResolver } from './events/event.resolver.js';
import { WebhookResolver } from './events/webhook.resolver.js';
import { SubscriptionResolver } from './events/subscription.resolver.js';
import { WebhookDeliveryResolver } from './events/webhook.resolver.js';
import { NodeResolver } from './node/node.resolver.js';
import { idFieldsResolver, plainIdFields } from './node/node.type.js';
import type { IdType } from '../global-id.js';
import { PetType } from './pets/pet.type.js';
import { CategoryType } from './categories/category.type.js';
import { OrderType } from './store/order.type.js';
import { AccountType, AccountWithKeyType, ApiKeyType, NewApiKeyType, ViewerType } from './accounts/account.type.js';
import { EventType } from './events/event.type.js';
import { WebhookDeliveryType, WebhookEndpointType, WebhookEndpointWithSecretType } from './events/webhook.type.js';

export const SCHEMA_FILE = 'schema/schema.graphql';

/** What resolvers need beyond their context: handed in by the facade (none when only printing the schema). */
export interface ResolverServices {
  gate: Pick<RateLimitGate, 'status'>;
}

const unavailable: ResolverServices = {
  gate: { status: () => Promise.reject(new Error('no rate-limit gate: this schema only prints')) },
};

/** Each type whose source objects carry the database id as `id`, and its GraphQL name (InventoryItem's ids are in its resolver). */
const ID_TYPES: ReadonlyArray<readonly [ClassType, IdType]> = [
  [PetType, 'Pet'],
  [CategoryType, 'Category'],
  [OrderType, 'Order'],
  [AccountType, 'Account'],
  [ApiKeyType, 'ApiKey'],
  [EventType, 'Event'],
  [WebhookEndpointType, 'WebhookEndpoint'],
  [WebhookDeliveryType, 'WebhookDelivery'],
  [ViewerType, 'Viewer'],
  [AccountWithKeyType, 'AccountWithKey'],
  [NewApiKeyType, 'NewApiKey'],
  [WebhookEndpointWithSecretType, 'WebhookEndpointWithSecret'],
];
const ID_FIELDS = ID_TYPES.map(([type, name]) => idFieldsResolver(type, name));

/** The executable schema, built from the type-graphql classes of this folder. */
export async function buildGraphQLSchema(services: ResolverServices = unavailable): Promise<GraphQLSchema> {
  const resolvers = [
    PetResolver,
    CategoryResolver,
    OrderResolver,
    InventoryResolver,
    AccountResolver,
    RateLimitResolver,
    EventResolver,
    WebhookResolver,
    SubscriptionResolver,
    WebhookDeliveryResolver,
    NodeResolver,
    ...ID_FIELDS,
  ] as const;
  // One instance per resolver class for the app's lifetime; constructors receive their services.
  const instances = new Map<abstract new (...args: never[]) => object, object>([[RateLimitResolver, new RateLimitResolver(services.gate)]]);
  const schema = await buildSchema({
    resolvers,
    // The standard directives (@skip, @include, @deprecated, @specifiedBy) and ours: a list given here replaces the defaults.
    directives: [...specifiedDirectives, stabilityDirective],
    validate: false,
    // Every subscription brings its own `subscribe` (reading the outbox, src/graphql/schema/events/subscription.resolver.ts);
    // type-graphql still wants a PubSub to exist, and none is used.
    pubSub: {
      publish: () => undefined,
      subscribe: () => {
        throw new Error('Subscriptions here have their own subscribe function.');
      },
    } as unknown as NonNullable<Parameters<typeof buildSchema>[0]['pubSub']>,
    container: {
      get: (cls: new () => object) => {
        let instance = instances.get(cls);
        if (!instance) instances.set(cls, (instance = new cls()));
        return instance;
      },
    },
  });
  return plainIdFields(
    schema,
    ID_TYPES.map(([, name]) => name),
  );
}

/** The committed SDL (`schema/schema.graphql`): sorted, with applied directives such as `@stability`. */
export function printGraphQLSchema(schema: GraphQLSchema): string {
  const header = '# Generated from src/graphql by `npm run schema:graphql`; do not edit by hand.\n\n';
  return `${header}${printSchemaWithDirectives(lexicographicSortSchema(schema))}\n`;
}
