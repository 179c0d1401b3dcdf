import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { RequestContext, TransactionContext } from '@mikro-orm/core';
import { createPet, startApp, type TestApp } from '../helpers/app.js';

/**
 * MikroORM's async contexts, used as published: each transaction sees its own entity manager, and none is left
 * behind for work that runs after the writes.
 */
describe('MikroORM async contexts', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(async () => t?.close());

  it('when pets, categories and stock were written through both facades, then work started afterwards sees no transaction or request context', async () => {
    await Promise.all([createPet(t, { stock: 3 }), createPet(t, { stock: 2 })]);
    const created = await t.admin.graphql(`mutation($input: NewCategoryInput!) { createCategory(input: $input) { id } }`, {
      input: { name: `Contexts ${Date.now()}` },
    });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.errors, undefined, created.text);
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.equal(TransactionContext.getEntityManager(), undefined);
    assert.equal(RequestContext.getEntityManager(), undefined);
    assert.equal(t.app.orm.em.getContext(false), t.app.orm.em, 'the global entity manager resolves to itself outside any write');
  });

  it('when one transaction ends while another still runs, then the other still sees its own entity manager, and none is left after both', async () => {
    let firstDone!: () => void;
    const first = new Promise<void>((resolve) => (firstDone = resolve));
    const seen: boolean[] = [];
    const one = t.app.orm.em
      .fork()
      .transactional(async (em) => {
        await new Promise((resolve) => setImmediate(resolve));
        seen.push(t.app.orm.em.getContext(false) === em);
      })
      .finally(firstDone);
    const other = t.app.orm.em.fork().transactional(async (em) => {
      await first;
      await new Promise((resolve) => setImmediate(resolve));
      // Read here, asserted outside: an assertion thrown in here would only look like the intended rollback.
      seen.push(t.app.orm.em.getContext(false) === em);
      throw new Error('rolled back on purpose');
    });
    const [a, b] = await Promise.allSettled([one, other]);
    assert.equal(a.status, 'fulfilled');
    assert.equal(b.status, 'rejected');
    assert.equal((b as PromiseRejectedResult).reason.message, 'rolled back on purpose');
    assert.deepEqual(seen, [true, true]);
    assert.equal(TransactionContext.getEntityManager(), undefined);
    assert.equal(t.app.orm.em.getContext(false), t.app.orm.em);
  });
});
