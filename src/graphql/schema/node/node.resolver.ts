import { Arg, Ctx, ID, Query, Resolver } from 'type-graphql';
import { DomainError, idCount, MAX_IDS } from '../../../domain/index.js';
import { actorOf, domainOf, type GraphQLContext } from '../../context.js';
import { decodeGlobalId, type NodeType } from '../../global-id.js';
import { NodeInterface } from './node.type.js';
import { PetType } from '../pets/pet.type.js';
import { CategoryType } from '../categories/category.type.js';
import { OrderType } from '../store/order.type.js';
import { InventoryItemType } from '../store/inventory.type.js';
import { AccountType, ApiKeyType } from '../accounts/account.type.js';
import { WebhookDeliveryType, WebhookEndpointType } from '../events/webhook.type.js';
import { toGraphQLEvent } from '../events/event.resolver.js';

/**
 * Reads one node as its typed read does, with that read's visibility. What the caller may not see (another
 * account's order, event, endpoint; a customer asking for another account) is null, as an unknown id is:
 * the answer never tells that it exists. Objects are built from the GraphQL classes, whose type `Node` resolves to.
 */
async function readNode(ctx: GraphQLContext, type: NodeType, id: number): Promise<NodeInterface | null> {
  const domain = domainOf(ctx);
  const actor = actorOf(ctx);
  const as = <T extends object>(cls: new () => T, view: object | null): T | null => (view ? Object.assign(new cls(), view) : null);
  try {
    switch (type) {
      case 'Pet':
        return as(PetType, await ctx.loaders.pets.load(id));
      case 'Category':
        return as(CategoryType, await ctx.loaders.categories.load(id));
      case 'InventoryItem':
        return as(InventoryItemType, await ctx.loaders.inventory.load(id));
      case 'Order':
        return as(OrderType, await domain.store.getOrder(actor, id));
      case 'Account':
        return as(AccountType, await domain.accounts.getAccount(actor, id));
      case 'ApiKey':
        return as(ApiKeyType, await domain.accounts.getApiKey(actor, id));
      case 'Event':
        return toGraphQLEvent(await domain.events.getEvent(actor, id));
      case 'WebhookEndpoint':
        return as(WebhookEndpointType, await domain.webhooks.getWebhook(actor, id));
      case 'WebhookDelivery':
        return as(WebhookDeliveryType, await domain.webhooks.getDelivery(actor, id));
    }
  } catch (error) {
    if (error instanceof DomainError && (error.code === 'NOT_FOUND' || error.code === 'FORBIDDEN')) return null;
    throw error;
  }
}

@Resolver()
export class NodeResolver {
  @Query(() => NodeInterface, {
    nullable: true,
    description:
      'Any object by its global `id` (Relay Global Object Identification), with the visibility of its typed read: what the caller may not see is null, ' +
      'as an unknown id is. Costs 1, as the typed read does. A malformed id is VALIDATION_FAILED.',
  })
  async node(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<NodeInterface | null> {
    const { type, databaseId } = decodeGlobalId(id, 'id');
    return readNode(ctx, type, databaseId);
  }

  @Query(() => [NodeInterface], {
    nullable: 'items',
    description: `Objects by their global ids, in the order given, each as \`node(id:)\` reads it (null where it does not). At most ${MAX_IDS} ids; costs 1 per id.`,
  })
  async nodes(@Arg('ids', () => [ID]) ids: string[], @Ctx() ctx: GraphQLContext): Promise<Array<NodeInterface | null>> {
    idCount(ids.length, 'ids');
    const decoded = ids.map((id, i) => decodeGlobalId(id, `ids[${i}]`));
    return Promise.all(decoded.map(({ type, databaseId }) => readNode(ctx, type, databaseId)));
  }
}
