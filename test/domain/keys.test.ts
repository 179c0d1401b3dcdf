import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { authenticateKey } from '../../src/domain/api-keys.js';
import { startDomain, type DomainFixture } from './support.js';

/**
 * A key resolved to its caller by the plain-SQL reader (every cache miss of the edge's key check), on the file and on
 * PostgreSQL alike: the same caller the account's own views describe.
 */
describe('domain: a key resolved to its caller', () => {
  let f: DomainFixture;
  before(async () => {
    f = await startDomain();
  });
  after(() => f?.close());

  it('when an enterprise account with custom limits uses its key, then the caller carries the account, the key and the limits', async () => {
    const before = Date.now();
    const created = await f.domain().accounts.createAccount(f.staff, {
      name: 'Big Co',
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 5000, perDay: 900_000, webhookEndpoints: 40, subscriptions: null },
    });
    // A second key, made a moment later: its id and creation time are not its account's.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const second = await f.domain().accounts.createApiKey(f.staff, created.id);
    assert.notEqual(second.id, created.id);
    const actor = await authenticateKey(f.reader, second.key);
    assert.ok(actor);
    assert.deepEqual(actor, {
      accountId: created.id,
      accountName: 'Big Co',
      role: 'customer',
      plan: 'enterprise',
      limits: { perMinute: 5000, perDay: 900_000, webhookEndpoints: 40, subscriptions: null },
      keyId: second.id,
      keyPrefix: second.prefix,
      keyCreatedAt: second.createdAt,
      bannedUntil: null,
    });
    assert.notEqual(actor.keyCreatedAt.getTime(), created.createdAt.getTime(), "the key's creation, not the account's");
    assert.ok(actor.keyCreatedAt.getTime() >= before);
  });

  it('when a plan without custom limits is used, then its caller has no custom limits; a staff key is staff', async () => {
    assert.equal(
      (
        await authenticateKey(
          f.reader,
          (
            await f.domain().accounts.createAccount(f.staff, { name: 'Small', role: 'customer', plan: 'free' })
          ).apiKey.key,
        )
      )?.limits,
      null,
    );
    // The fixture's callers are resolved by authenticateKey too (test/domain/support.ts).
    assert.equal(f.staff.role, 'staff');
    assert.equal(f.customer.plan, 'pro');
  });

  it('when a key is revoked or unknown, then it resolves to no caller', async () => {
    const created = await f.domain().accounts.createAccount(f.staff, { name: 'Gone', role: 'customer', plan: 'pro' });
    assert.ok(await authenticateKey(f.reader, created.apiKey.key));
    await f.domain().accounts.revokeApiKey(f.staff, created.apiKey.id);
    assert.equal(await authenticateKey(f.reader, created.apiKey.key), null);
    assert.equal(await authenticateKey(f.reader, `psk_${'x'.repeat(32)}`), null);
  });

  it('when a key has a ban recorded, then the caller carries it while it lasts and not after', async () => {
    const created = await f.domain().accounts.createAccount(f.staff, { name: 'Banned', role: 'customer', plan: 'pro' });
    const until = new Date(Date.now() + 60_000);
    await f.domain().accounts.recordBan(created.apiKey.id, until);
    assert.equal((await authenticateKey(f.reader, created.apiKey.key))?.bannedUntil, until.getTime());
    assert.equal(
      (await authenticateKey(f.reader, created.apiKey.key, { now: until.getTime() + 1 }))?.bannedUntil,
      null,
      'an expired ban reads as none',
    );
    await f.domain().accounts.liftBan(f.staff, created.apiKey.id);
    assert.equal((await authenticateKey(f.reader, created.apiKey.key))?.bannedUntil, null);
  });

  it('when an account changes plan, then its key resolves to the new plan at once (no cache at this layer)', async () => {
    const created = await f.domain().accounts.createAccount(f.staff, { name: 'Grows', role: 'customer', plan: 'free' });
    await f.domain().accounts.updateAccount(f.staff, created.id, { plan: 'business' });
    assert.equal((await authenticateKey(f.reader, created.apiKey.key))?.plan, 'business');
  });
});
