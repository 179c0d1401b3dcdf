import type { RestHandlers } from './router.js';
import type { WebhookDeliveryView, WebhookEndpointView, WebhookEndpointWithSecretView } from '../domain/index.js';
import { eventRepresentation } from '../domain/representations.js';
import * as out from './serialize.js';

const webhook = (w: WebhookEndpointView) => ({
  id: w.id,
  url: w.url,
  events: w.events,
  enabled: w.enabled,
  disabledReason: w.disabledReason,
  createdAt: w.createdAt.toISOString(),
});

const webhookWithSecret = (w: WebhookEndpointWithSecretView) => ({ ...webhook(w), secret: w.secret });

const delivery = (d: WebhookDeliveryView) => ({
  ...d,
  scheduledAt: d.scheduledAt.toISOString(),
  attemptedAt: d.attemptedAt ? d.attemptedAt.toISOString() : null,
});

/** The event feed (`GET /v1/events`) and webhook endpoints with their delivery log. */
export function eventsRoutes(): RestHandlers {
  return {
    listEvents: async ({ query }, { domain, actor, url }) => {
      const page = await domain.events.listEvents(actor, { after: query.after, types: query.types }, query.limit);
      const headers: Record<string, string> = {};
      if (page.nextCursor) {
        // The feed pages by event id (`after`), so a client can resume from an event it got elsewhere.
        const next = url();
        next.searchParams.set('after', page.nextCursor);
        headers.Link = `<${next.pathname}${next.search}>; rel="next"`;
      }
      return { body: page.items.map(eventRepresentation), headers };
    },

    listWebhooks: async ({ query }, { domain, actor, url }) =>
      out.page(await domain.webhooks.listWebhooks(actor, { limit: query.limit, cursor: query.cursor }), url, webhook),

    createWebhook: async ({ body }, { domain, actor }) => {
      const created = await domain.webhooks.createWebhook(actor, body);
      return { status: 201, body: webhookWithSecret(created), headers: { Location: `/v1/webhooks/${created.id}` } };
    },

    getWebhook: async ({ params }, { domain, actor }) => ({ body: webhook(await domain.webhooks.getWebhook(actor, params.webhookId)) }),

    updateWebhook: async ({ params, body }, { domain, actor }) => ({
      body: webhook(await domain.webhooks.updateWebhook(actor, params.webhookId, body)),
    }),

    deleteWebhook: async ({ params }, { domain, actor }) => {
      await domain.webhooks.deleteWebhook(actor, params.webhookId);
      return { status: 204 };
    },

    rotateWebhookSecret: async ({ params }, { domain, actor }) => ({
      body: webhookWithSecret(await domain.webhooks.rotateSecret(actor, params.webhookId)),
    }),

    listWebhookDeliveries: async ({ params, query }, { domain, actor, url }) =>
      out.page(await domain.webhooks.listDeliveries(actor, params.webhookId, { limit: query.limit, cursor: query.cursor }), url, delivery),

    redeliverWebhookDelivery: async ({ params }, { domain, actor }) => ({
      status: 202,
      body: delivery(await domain.webhooks.redeliver(actor, params.webhookId, params.deliveryId)),
    }),
  };
}
