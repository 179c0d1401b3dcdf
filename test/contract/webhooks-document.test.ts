/**
 * The `x-webhooks` description of schema/openapi.yaml (OpenAPI 3.0.3 has no `webhooks` section): one
 * entry per event type, whose request-body schema is what the service really sends.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createAjv, loadOpenApiDocument } from '../../src/rest/openapi.js';
import { EVENT_TYPES } from '../../src/domain/index.js';
import { startApp, type TestApp } from '../helpers/app.js';
import { walk } from '../rest/support.js';

const doc = loadOpenApiDocument() as any;
const ajv = createAjv();
ajv.addSchema({ components: doc.components }, 'openapi');
const schemaRef = (type: string) =>
  doc['x-webhooks']?.[type]?.post?.requestBody?.content?.['application/json']?.schema?.$ref as string | undefined;

describe('contract: the x-webhooks description', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when x-webhooks is read, then it describes exactly the event types the service emits, each with an Event schema naming that type', () => {
    assert.deepEqual(Object.keys(doc['x-webhooks'] ?? {}).sort(), [...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) {
      const ref = schemaRef(type);
      assert.ok(ref?.startsWith('#/components/schemas/'), `${type}: a component schema`);
      const schema = doc.components.schemas[ref!.split('/').pop()!];
      assert.ok(schema.properties.type.enum.includes(type), `${ref} names ${type}`);
      assert.ok(
        doc.components.schemas.Event.oneOf.some((s: { $ref: string }) => s.$ref === ref),
        `${ref} is one of Event`,
      );
      const headers = doc['x-webhooks'][type].post.parameters.map((p: { name: string }) => p.name);
      assert.deepEqual(headers, ['webhook-id', 'webhook-timestamp', 'webhook-signature']);
    }
  });

  it('when every type of event happens, then each event the service emits validates against its x-webhooks schema', async () => {
    const cat = (await t.admin.post('/v1/categories', { name: 'Contract' })).body;
    await t.admin.put(`/v1/categories/${cat.id}`, { name: 'Contract', description: 'With a description' });
    const pet = (await t.admin.post('/v1/pets', { name: 'Spec', categoryId: cat.id })).body;
    await t.admin.put(`/v1/store/inventory/${pet.id}`, { quantity: 3 });
    const placed = (await t.admin.post('/v1/store/orders', { petId: pet.id, quantity: 1, shipDate: '2030-01-01T00:00:00Z' })).body;
    const other = (await t.admin.post('/v1/store/orders', { petId: pet.id, quantity: 1 })).body;
    await t.admin.patch(`/v1/store/orders/${placed.id}`, { complete: true });
    await t.admin.delete(`/v1/store/orders/${other.id}`);
    await t.admin.put(`/v1/pets/${pet.id}`, { name: 'Spec', categoryId: cat.id, status: 'sold' });
    const doomed = (await t.admin.post('/v1/pets', { name: 'Doomed', categoryId: cat.id })).body;
    await t.admin.delete(`/v1/pets/${doomed.id}`);
    const empty = (await t.admin.post('/v1/categories', { name: 'Empty' })).body;
    await t.admin.delete(`/v1/categories/${empty.id}`);
    const events = (await walk(t.admin, '/v1/events?limit=100')).items;
    assert.deepEqual([...new Set(events.map((e) => e.type))].sort(), [...EVENT_TYPES].sort(), 'every type happened');
    for (const event of events) {
      const validate = ajv.getSchema(`openapi${schemaRef(event.type)}`) ?? ajv.compile({ $ref: `openapi${schemaRef(event.type)}` });
      assert.ok(validate(event), `${event.type} ${JSON.stringify(event)}: ${JSON.stringify(validate.errors)}`);
    }
  });
});
