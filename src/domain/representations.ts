import type { CategoryView, EventView, InventoryView, OrderView, PetView } from './views.js';

/**
 * The public JSON shapes of the resources (schema/openapi.yaml): what REST answers and what an
 * event carries as its `data`, so an event shows a resource exactly as `GET /v1/…` does.
 */
export const petRepresentation = (p: PetView) => ({ id: p.id, name: p.name, categoryId: p.categoryId, status: p.status });

export const categoryRepresentation = (c: CategoryView) =>
  c.description === null ? { id: c.id, name: c.name } : { id: c.id, name: c.name, description: c.description };

export const orderRepresentation = (o: OrderView) => ({
  id: o.id,
  petId: o.petId,
  quantity: o.quantity,
  shipDate: o.shipDate ? o.shipDate.toISOString() : null,
  complete: o.complete,
});

export const inventoryRepresentation = (i: InventoryView) => ({ petId: i.petId, quantity: i.quantity, status: i.status });

/** An event as the feed lists it and a webhook delivers it (`{id, type, createdAt, data}`). */
export const eventRepresentation = (e: EventView) => ({ id: e.id, type: e.type, createdAt: e.createdAt.toISOString(), data: e.data });
