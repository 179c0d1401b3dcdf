import { Field, ID, InputType, Int, ObjectType } from 'type-graphql';
import { DateTimeResolver } from 'graphql-scalars';
import type { WebhookDeliveryView, WebhookEndpointView, WebhookEndpointWithSecretView, WebhookInput } from '../../../domain/index.js';
import { connectionType } from '../connection.type.js';
import { ID_DESCRIPTION, NodeInterface } from '../node/node.type.js';

/** The fields of an endpoint but its id (see `AccountFields`): `WebhookEndpoint` and `WebhookEndpointWithSecret` extend it. */
@ObjectType({ simpleResolvers: true })
abstract class WebhookEndpointFields implements Omit<WebhookEndpointView, 'id'> {
  @Field(() => String, { description: 'Where deliveries are POSTed (https, public addresses only).' })
  url!: string;

  @Field(() => [String], { description: 'The event types it receives.' })
  events!: string[];

  @Field(() => Boolean, { description: 'Whether deliveries are made.' })
  enabled!: boolean;

  @Field(() => String, { nullable: true, description: 'Why the service disabled it (its deliveries kept failing); null otherwise.' })
  disabledReason!: string | null;

  @Field(() => DateTimeResolver)
  createdAt!: Date;
}

@ObjectType('WebhookEndpoint', {
  simpleResolvers: true,
  implements: NodeInterface,
  description: 'A registered webhook endpoint, without its secret (REST `WebhookEndpoint`).',
})
export class WebhookEndpointType extends WebhookEndpointFields implements WebhookEndpointView {
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: number;
}

@ObjectType('WebhookEndpointWithSecret', {
  simpleResolvers: true,
  description: 'A webhook endpoint with its signing secret, returned at registration and rotation only.',
})
export class WebhookEndpointWithSecretType extends WebhookEndpointFields implements WebhookEndpointWithSecretView {
  @Field(() => ID, {
    description:
      "Global and opaque, this type's own (a normalised cache keeps it apart from the WebhookEndpoint); every argument that takes the WebhookEndpoint's id takes it too.",
  })
  id!: number;

  @Field(() => String, { description: 'The signing secret (`whsec_…`); not shown again.' })
  secret!: string;
}

@ObjectType('WebhookEndpointConnection', { simpleResolvers: true, description: 'A page of webhook endpoints.' })
export class WebhookEndpointConnection extends connectionType('WebhookEndpoint', WebhookEndpointType) {}

@ObjectType('WebhookDelivery', {
  simpleResolvers: true,
  implements: NodeInterface,
  description: 'One attempt to deliver one event to one endpoint (REST `WebhookDelivery`).',
})
export class WebhookDeliveryType implements WebhookDeliveryView {
  @Field(() => ID, { description: ID_DESCRIPTION })
  id!: number;

  @Field(() => ID, { description: 'The `id` of the endpoint.' })
  webhookId!: number;

  @Field(() => ID, { description: 'The `id` of the event delivered (its `webhook-id` header is the event’s `databaseId`).' })
  eventId!: number;

  @Field(() => String)
  eventType!: string;

  @Field(() => Int, { description: '1 for the first attempt (and a redelivery), then 2, 3, … for the retries.' })
  attempt!: number;

  @Field(() => String, { description: 'pending, succeeded (a 2xx answer) or failed.' })
  status!: WebhookDeliveryView['status'];

  @Field(() => DateTimeResolver)
  scheduledAt!: Date;

  @Field(() => DateTimeResolver, { nullable: true })
  attemptedAt!: Date | null;

  @Field(() => Int, { nullable: true, description: "The receiver's HTTP status; null when there was no answer." })
  responseStatus!: number | null;

  @Field(() => Int, { nullable: true })
  durationMs!: number | null;

  @Field(() => String, { nullable: true, description: 'Why it failed; null on success.' })
  error!: string | null;
}

@ObjectType('WebhookDeliveryConnection', { simpleResolvers: true, description: 'A page of delivery attempts, oldest first.' })
export class WebhookDeliveryConnection extends connectionType('WebhookDelivery', WebhookDeliveryType) {}

@InputType('NewWebhookInput', { description: 'A webhook endpoint to register (REST `NewWebhookEndpoint`).' })
export class NewWebhookInput implements WebhookInput {
  @Field(() => String, { description: 'https, resolving to public addresses only; at most 2048 characters.' })
  url!: string;

  @Field(() => [String], { description: 'Event types, or families such as `order.*`.' })
  events!: string[];
}

@InputType('WebhookUpdateInput', { description: 'The properties to change (REST `WebhookEndpointUpdate`).' })
export class WebhookUpdateInput implements WebhookInput {
  @Field(() => String, { nullable: true })
  url?: string;

  @Field(() => [String], { nullable: true })
  events?: string[];

  @Field(() => Boolean, { nullable: true, description: 'false pauses deliveries; true resumes them and clears `disabledReason`.' })
  enabled?: boolean;
}
