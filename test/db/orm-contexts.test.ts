import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { asyncContextsUseHooks, ScopedAsyncLocalStorage } from '../../src/db/orm-contexts.js';
import { TransactionContext } from '@mikro-orm/core';
import { projectPath } from '../../src/project-path.js';
import { createPet, startApp, type TestApp } from '../helpers/app.js';

/**
 * MikroORM's async contexts are on only while a write is in progress (src/db/orm-contexts.ts). On Node 20 and 22
 * an `AsyncLocalStorage` that is on gives every new promise of the process an own symbol property (its value
 * there) and costs a call into JavaScript per promise; Node 24 has no such hook, so there is nothing to switch off.
 */
const hookBased = asyncContextsUseHooks();
const noHooks = hookBased ? false : `Node ${process.versions.node}'s AsyncLocalStorage has no per-promise hook`;

/** Own symbol properties of a new promise: one per enabled hook-based storage (node:test's own among them). */
const promiseMarks = () => Object.getOwnPropertySymbols(Promise.resolve()).length;
const transactionStorage = () => (TransactionContext as unknown as { storage: ScopedAsyncLocalStorage<unknown> }).storage;

describe('MikroORM async contexts: on only while a write runs', () => {
  let t: TestApp;
  /** A new promise's marks before the app ran any ORM work (node:test's own storages are on already). */
  let baseline: number;
  before(async () => {
    baseline = promiseMarks();
    t = await startApp();
  });
  after(async () => t?.close());

  it('when pets, categories and stock were written through both facades, then a promise made afterwards carries no ORM context', { skip: noHooks }, async () => {
    await Promise.all([createPet(t, { stock: 3 }), createPet(t, { stock: 2 })]);
    const created = await t.admin.graphql(`mutation($input: NewCategoryInput!) { createCategory(input: $input) { id } }`, { input: { name: `Contexts ${Date.now()}` } });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.errors, undefined, created.text);
    assert.ok(transactionStorage() instanceof ScopedAsyncLocalStorage, 'MikroORM made its storages as scoped ones');
    // The writes' events wake the webhook relay, an ORM transaction of its own: its storages are on while it runs.
    const deadline = Date.now() + 5000;
    while (promiseMarks() !== baseline && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(promiseMarks(), baseline, 'a promise made after the writes still carries the value of a storage left on');
  });

  it('when one transaction ends while another still runs, then the other still sees its own entity manager, and the storage goes off after it', { skip: noHooks }, async () => {
    const storage = transactionStorage();
    let firstDone!: () => void;
    const first = new Promise<void>((resolve) => (firstDone = resolve));
    const seen: boolean[] = [];
    let onWhileRunning: boolean | undefined;
    const one = t.app.orm.em
      .fork()
      .transactional(async (em) => {
        await new Promise((resolve) => setImmediate(resolve));
        seen.push(TransactionContext.getEntityManager() === em);
      })
      .finally(firstDone);
    const other = t.app.orm.em.fork().transactional(async (em) => {
      await first;
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(TransactionContext.getEntityManager() === em);
      // Read here, asserted outside: an assertion thrown in here would only look like the intended rollback.
      onWhileRunning = storage.inUse;
      throw new Error('rolled back on purpose');
    });
    const [a, b] = await Promise.allSettled([one, other]);
    assert.equal(a.status, 'fulfilled');
    assert.equal(b.status, 'rejected');
    assert.equal((b as PromiseRejectedResult).reason.message, 'rolled back on purpose');
    assert.equal(onWhileRunning, true);
    assert.deepEqual(seen, [true, true]);
    assert.equal(storage.inUse, false);
    assert.equal(TransactionContext.getEntityManager(), undefined);
  });
});

describe('MikroORM async contexts: the runtime and the load order', () => {
  it('when the runtime is asked, then its contexts are hook-based exactly on Node before 24 without a context frame, or Node 24 with --no-async-context-frame', () => {
    const major = Number(process.versions.node.split('.')[0]);
    const flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
    const expected = major >= 24 ? flags.includes('--no-async-context-frame') : !flags.includes('--experimental-async-context-frame');
    assert.equal(asyncContextsUseHooks(), expected);
  });

  /** Starts an ORM in a fresh node process (no test runner, no preload) after `first` was imported. */
  const startOrmAfter = (first: string) => {
    const script = `
      await import(${JSON.stringify(first)});
      const { createOrm } = await import(${JSON.stringify(projectPath('dist/src/db/orm.js'))});
      await createOrm({ database: { kind: 'sqlite', path: ':memory:' }, dbPoolMax: 1, dbStatementTimeoutMs: 1000 })
        .then((orm) => { console.log('started'); return orm.close(); }, (error) => console.log('refused:', error.message))
        .finally(() => process.exit(0));`;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: projectPath('.'), encoding: 'utf8', timeout: 60_000 });
    return run.stdout + run.stderr;
  };

  it('when MikroORM is loaded before the module that scopes its contexts, then the ORM refuses to start', { skip: noHooks }, () => {
    assert.match(startOrmAfter('@mikro-orm/core'), /refused: @mikro-orm\/core was loaded before src\/db\/orm-contexts\.ts/);
  });

  it('when the app module is loaded first, as the service and the tests load it, then the ORM starts with scoped contexts', { skip: noHooks }, () => {
    assert.match(startOrmAfter(projectPath('dist/src/app.js')), /^started$/m);
  });
});
