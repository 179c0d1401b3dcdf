import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import type { WebhookDeliveryView, WebhookEndpointView, WebhookEndpointWithSecretView } from '../../../domain/index.js';
import { actorOf, domainOf, type GraphQLContext } from '../../context.js';
import { databaseIdOf } from '../../global-id.js';
import { REFERENCE_IDS } from '../node/node.type.js';
import { PageArgs, paged, type Connection } from '../connection.type.js';
import {
  NewWebhookInput,
  WebhookDeliveryConnection,
  WebhookDeliveryType,
  WebhookEndpointConnection,
  WebhookEndpointType,
  WebhookEndpointWithSecretType,
  WebhookUpdateInput,
} from './webhook.type.js';

/** Omitted and null input fields both mean "unchanged", as an absent property does in REST's PATCH. */
const given = <T>(value: T | null | undefined): T | undefined => (value === null ? undefined : value);

@Resolver(() => WebhookEndpointType)
export class WebhookResolver {
  @Query(() => WebhookEndpointConnection, { description: "Your account's webhook endpoints in id order (REST `GET /webhooks`)." })
  async webhooks(@Args(() => PageArgs) page: PageArgs, @Ctx() ctx: GraphQLContext): Promise<Connection<WebhookEndpointView>> {
    return paged(
      page,
      (request) => domainOf(ctx).webhooks.listWebhooks(actorOf(ctx), request),
      (w) => w.id,
    );
  }

  @Query(() => WebhookEndpointType, {
    nullable: true,
    description: "One of your account's webhook endpoints (REST `GET /webhooks/{webhookId}`).",
  })
  async webhook(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<WebhookEndpointView> {
    return domainOf(ctx).webhooks.getWebhook(actorOf(ctx), databaseIdOf('WebhookEndpoint', id, 'id'));
  }

  @Mutation(() => WebhookEndpointWithSecretType, {
    nullable: true,
    description:
      'Registers a webhook endpoint; its signing secret is in this answer only (REST `POST /webhooks`). Plans cap endpoints: free 1, pro 5, business 20.',
  })
  async createWebhook(
    @Arg('input', () => NewWebhookInput) input: NewWebhookInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookEndpointWithSecretView> {
    return domainOf(ctx).webhooks.createWebhook(actorOf(ctx), input);
  }

  @Mutation(() => WebhookEndpointType, {
    nullable: true,
    description: 'Changes the URL, event types or `enabled` (REST `PATCH /webhooks/{webhookId}`).',
  })
  async updateWebhook(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => WebhookUpdateInput) input: WebhookUpdateInput,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookEndpointView> {
    const changes = { url: given(input.url), events: given(input.events), enabled: given(input.enabled) };
    return domainOf(ctx).webhooks.updateWebhook(actorOf(ctx), databaseIdOf('WebhookEndpoint', id, 'id'), changes);
  }

  @Mutation(() => ID, {
    nullable: true,
    description: 'Deletes the endpoint and its delivery log; returns its id (REST `DELETE /webhooks/{webhookId}`).',
  })
  async deleteWebhook(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<string> {
    await domainOf(ctx).webhooks.deleteWebhook(actorOf(ctx), databaseIdOf('WebhookEndpoint', id, 'id'));
    return id;
  }

  @Mutation(() => WebhookEndpointWithSecretType, {
    nullable: true,
    description:
      'A new signing secret, shown once; the previous one signs too for 24 hours (REST `POST /webhooks/{webhookId}/rotate-secret`).',
  })
  async rotateWebhookSecret(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<WebhookEndpointWithSecretView> {
    return domainOf(ctx).webhooks.rotateSecret(actorOf(ctx), databaseIdOf('WebhookEndpoint', id, 'id'));
  }

  @Query(() => WebhookDeliveryConnection, {
    description: 'Every delivery attempt of an endpoint, oldest first (REST `GET /webhooks/{webhookId}/deliveries`).',
  })
  async webhookDeliveries(
    @Arg('webhookId', () => ID) webhookId: string,
    @Args(() => PageArgs) page: PageArgs,
    @Ctx() ctx: GraphQLContext,
  ): Promise<Connection<WebhookDeliveryView>> {
    return paged(
      page,
      (request) => domainOf(ctx).webhooks.listDeliveries(actorOf(ctx), databaseIdOf('WebhookEndpoint', webhookId, 'webhookId'), request),
      (d) => d.id,
    );
  }

  @Mutation(() => WebhookDeliveryType, {
    nullable: true,
    description:
      "Sends a delivery's event again now, as a new attempt; while one is pending for the event, that one is returned, brought forward. `WEBHOOK_DISABLED` (409) on a disabled endpoint (REST `POST /webhooks/{webhookId}/deliveries/{deliveryId}/redeliver`).",
  })
  async redeliverWebhookDelivery(
    @Arg('webhookId', () => ID) webhookId: string,
    @Arg('deliveryId', () => ID) deliveryId: string,
    @Ctx() ctx: GraphQLContext,
  ): Promise<WebhookDeliveryView> {
    return domainOf(ctx).webhooks.redeliver(
      actorOf(ctx),
      databaseIdOf('WebhookEndpoint', webhookId, 'webhookId'),
      databaseIdOf('WebhookDelivery', deliveryId, 'deliveryId'),
    );
  }
}

@Resolver(() => WebhookDeliveryType)
export class WebhookDeliveryResolver {
  @FieldResolver(() => ID, { description: 'The `id` of the endpoint.' })
  webhookId(@Root() delivery: WebhookDeliveryView): string {
    return REFERENCE_IDS.WebhookDelivery.webhookId(delivery);
  }

  @FieldResolver(() => ID, { description: "The `id` of the event delivered (its `webhook-id` header is the event's `databaseId`)." })
  eventId(@Root() delivery: WebhookDeliveryView): string {
    return REFERENCE_IDS.WebhookDelivery.eventId(delivery);
  }
}
