import type { CategoryView, EventView, OrderView } from './views.js';

/**
 * The public JSON shapes of the resources (schema/openapi.yaml) whose view is not that shape already:
 * what REST answers and what an event carries as its `data`, so an event shows a resource exactly as
 * `GET /v1/…` does. A pet (`PetView`) and an inventory entry (`InventoryView`) are their JSON shape and
 * are sent as they are (docs/ARCHITECTURE.md, "Data shapes").
 */

export const categoryRepresentation = (c: CategoryView) =>
  c.description === null ? { id: c.id, name: c.name } : { id: c.id, name: c.name, description: c.description };

export const orderRepresentation = (o: OrderView) => ({
  id: o.id,
  petId: o.petId,
  quantity: o.quantity,
  shipDate: o.shipDate ? o.shipDate.toISOString() : null,
  complete: o.complete,
});

/** An event as the feed lists it and a webhook delivers it (`{id, type, createdAt, data}`). */
export const eventRepresentation = (e: EventView) => ({ id: e.id, type: e.type, createdAt: e.createdAt.toISOString(), data: e.data });
