import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rejectsWith, startDomain, type DomainFixture } from './support.js';
import { authenticateKey } from '../../src/domain/api-keys.js';
import { WebhookQueue } from '../../src/domain/webhook-queue.service.js';
import { WebhookDelivery } from '../../src/domain/entities/index.js';

/** Webhook rules held by the domain, so both facades get them (no HTTP). */
describe('domain: webhooks', () => {
  let f: DomainFixture;
  before(async () => {
    f = await startDomain();
  });
  after(() => f?.close());

  it('when an update changes nothing, then VALIDATION_FAILED, whichever facade sent it', async () => {
    await rejectsWith(f.domain().webhooks.updateWebhook(f.customer, 1, {}), 'VALIDATION_FAILED');
  });

  it('when a relay batch of 200 public events meets 50 endpoints that want every one, then all 10,000 deliveries are queued', async () => {
    // SQLite takes at most 32,766 bound parameters in a statement and PostgreSQL 65,535: 50 endpoints × 200 events × 7
    // columns is over both. MikroORM's `execute` inlines the values into the SQL text, so its insert passes today; a relay
    // on bound parameters (the plain-SQL writer) would have to split its inserts, and this is the test that says so.
    const account = await f.domain().accounts.createAccount(f.staff, {
      name: 'Fan-out',
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 1000, perDay: 100_000, webhookEndpoints: 50 },
    });
    const owner = (await authenticateKey(f.reader, account.apiKey.key))!;
    for (let i = 0; i < 50; i++)
      await f.domain().webhooks.createWebhook(owner, { url: `https://hooks.example.com/${i}`, events: ['pet.created'] });
    const category = await f.domain().categories.createCategory(f.staff, { name: 'Fan-out' });
    for (let i = 0; i < 200; i++) await f.domain().pets.createPet(f.staff, { name: `Fan ${i}`, categoryId: category.id });

    const relay = new WebhookQueue(f.orm.em.fork(), f.reader);
    let relayed = 0;
    for (let batch = await relay.relayEvents(200); batch > 0; batch = await relay.relayEvents(200)) relayed += batch;
    assert.ok(relayed >= 200, `relayed ${relayed} events`);
    assert.equal(await f.orm.em.fork().count(WebhookDelivery, { eventType: 'pet.created' }), 50 * 200);
  });

  it("when an endpoint's attempt fails, then its account's other endpoints come first for a place, until one of its attempts succeeds", async () => {
    const account = await f.domain().accounts.createAccount(f.staff, {
      name: 'Two endpoints',
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 1000, perDay: 100_000, webhookEndpoints: 5 },
    });
    const owner = (await authenticateKey(f.reader, account.apiKey.key))!;
    const [a, b] = [
      await f.domain().webhooks.createWebhook(owner, { url: 'https://hooks.example.com/a', events: ['category.created'] }),
      await f.domain().webhooks.createWebhook(owner, { url: 'https://hooks.example.com/b', events: ['category.created'] }),
    ];
    for (let i = 0; i < 3; i++) await f.domain().categories.createCategory(f.staff, { name: `Turns ${i}` });
    const queue = () => new WebhookQueue(f.orm.em.fork(), f.reader);
    while ((await queue().relayEvents(200)) > 0);
    const ours = async () => (await queue().dueEndpoints(100)).map((d) => d.endpointId).filter((id) => id === a!.id || id === b!.id);
    /** Takes `endpoint`'s next due attempt, records `ok`, and gives its queue back. */
    const attempt = async (endpoint: number, ok: boolean) => {
      const taken = (await queue().takeAttempt(endpoint, 'test', 60_000))!;
      const outcome = { ok, status: ok ? 204 : 500, durationMs: 1, error: ok ? null : 'the receiver answered HTTP 500' };
      assert.equal((await queue().recordAttempt(taken, 'test', outcome, new Date())).recorded, true);
      await queue().releaseQueue(endpoint, 'test');
    };
    assert.deepEqual(await ours(), [a!.id, b!.id], 'alike, by id');
    // B delivers its first event, A fails its own: both wait for the second event, A marked failing.
    await attempt(b!.id, true);
    await attempt(a!.id, false);
    assert.deepEqual(await ours(), [b!.id, a!.id], 'the failing endpoint after the other');
    // A's next attempt succeeds: it is no longer failing, and both wait for the third event.
    await attempt(b!.id, true);
    await attempt(a!.id, true);
    assert.deepEqual(await ours(), [a!.id, b!.id], 'alike again');
  });
});
