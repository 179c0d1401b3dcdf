import type { RestHandlers } from './router.js';
import { ReplayedDomainError } from '../domain/index.js';
import { HttpError } from '../http/errors.js';
import * as out from './serialize.js';

export function storeRoutes(): RestHandlers {
  return {
    listOrders: async ({ query }, { domain, actor, url }) => {
      const complete = query.complete === undefined ? undefined : query.complete === true || query.complete === 'true';
      const result = await domain.store.listOrders(actor, { complete, petId: query.petId }, { limit: query.limit, cursor: query.cursor });
      return out.page(result, url, out.order);
    },

    placeOrder: async ({ body, headers }, { domain, actor }) => {
      const { order, replayed } = await domain.store.placeOrder(actor, body, headers['idempotency-key']).catch((error: unknown) => {
        // A replayed refusal is marked like a replayed success.
        if (error instanceof ReplayedDomainError)
          throw new HttpError(error.code, error.message, { 'Idempotent-Replayed': 'true' }, error.details);
        throw error;
      });
      const responseHeaders: Record<string, string> = { Location: `/v1/store/orders/${order.id}` };
      if (replayed) responseHeaders['Idempotent-Replayed'] = 'true';
      return { status: 201, body: out.order(order), headers: responseHeaders };
    },

    getOrder: async ({ params }, { domain, actor }) => ({ body: out.order(await domain.store.getOrder(actor, params.orderId)) }),

    completeOrder: async ({ params, body }, { domain, actor }) => ({
      body: out.order(await domain.store.completeOrder(actor, params.orderId, body.shipDate)),
    }),

    cancelOrder: async ({ params }, { domain, actor }) => {
      await domain.store.cancelOrder(actor, params.orderId);
      return { status: 204 };
    },

    listInventory: async ({ query }, { domain, actor, url }) =>
      out.page(await domain.store.listInventory(actor, { limit: query.limit, cursor: query.cursor }), url),

    getInventoryItem: async ({ params }, { domain }) => ({ body: await domain.store.getInventory(params.petId) }),

    setInventory: async ({ params, body }, { domain, actor }) => ({
      body: await domain.store.setInventory(actor, params.petId, body.quantity),
    }),
  };
}
