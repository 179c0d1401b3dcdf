/**
 * MikroORM's async contexts, switched on only while they are in use.
 *
 * MikroORM keeps four `AsyncLocalStorage`s (the transaction's and the request's entity manager, "inside a flush",
 * the raw fragments of a query) and enters one (`run`) on every flush and every `em.transactional`. On Node 20 and
 * 22, `AsyncLocalStorage` is built on async hooks: from the first `run` on, for the rest of the process's life, every
 * promise anywhere in the process called into JavaScript as it was created, to copy each enabled storage's value onto
 * it, so one write through the ORM made every later read dearer (docs/PERFORMANCE.md, 2026-11-29). Node 24 keeps these
 * contexts in V8's own continuation data instead (as Node 22 does with `--experimental-async-context-frame`): no hook,
 * nothing to switch off, and this module does nothing there.
 *
 * On the hook-based runtimes, MikroORM is loaded here first, with its storages made as `ScopedAsyncLocalStorage`:
 * each switches itself off (`disable()`) when the last of its `run`s has settled, and on again at the next `run` (as
 * `AsyncLocalStorage.run` always does). Outside its runs a storage returns nothing: MikroORM reads its storages only
 * inside the transaction, flush or query that entered them, and the service does no ORM work that outlives them. The
 * request context (`RequestContext`), which the service never enters and whose express-style `create(em, next)`
 * returns before the request's work is done, gets Node's own class back.
 *
 * Import this module before anything that loads `@mikro-orm/core` (src/main.ts and src/db/orm.ts do so first, the test
 * runner preloads it); `createOrm` refuses to start when MikroORM was loaded before it (`ormContextsScoped`).
 */
import asyncHooks, { AsyncLocalStorage } from 'node:async_hooks';
import { createRequire } from 'node:module';

/** An `AsyncLocalStorage` enabled only while one of its `run`s is in progress (or for good after `enterWith`). */
export class ScopedAsyncLocalStorage<T> extends AsyncLocalStorage<T> {
  #running = 0;
  #pinned = false;

  override run<R>(store: T, callback: () => R): R;
  override run<R, A extends unknown[]>(store: T, callback: (...args: A) => R, ...args: A): R;
  override run<R, A extends unknown[]>(store: T, callback: (...args: A) => R, ...args: A): R {
    this.#running++;
    let result: R;
    try {
      result = super.run(store, callback, ...args);
    } catch (error) {
      this.#settled();
      throw error;
    }
    if (!isThenable(result)) {
      this.#settled();
      return result;
    }
    return result.then(
      (value) => {
        this.#settled();
        return value;
      },
      (error: unknown) => {
        this.#settled();
        throw error;
      },
    ) as R;
  }

  /**
   * No end to wait for: the storage stays on from here. None of the scoped storages is entered this way in MikroORM
   * 6.6 (its `RequestContext.enter` is, and that storage keeps Node's class); kept so that one entered so would not be
   * switched off under its caller by a later `run`'s end.
   */
  override enterWith(store: T): void {
    this.#pinned = true;
    super.enterWith(store);
  }

  /** Whether a `run` of this storage is in progress (or `enterWith` pinned it on). */
  get inUse(): boolean {
    return this.#pinned || this.#running > 0;
  }

  #settled(): void {
    if (--this.#running === 0 && !this.#pinned) this.disable();
  }
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';

/**
 * Whether this process's `AsyncLocalStorage` is built on async hooks (Node 20, Node 22 without
 * `--experimental-async-context-frame`, Node 24 with `--no-async-context-frame`): read from the class itself, whose
 * hook-based implementation copies a store onto each new resource (`_propagate`).
 */
export const asyncContextsUseHooks = (): boolean => typeof (AsyncLocalStorage.prototype as { _propagate?: unknown })._propagate === 'function';

const require = createRequire(import.meta.url);

/** MikroORM's own storages, scoped when this runtime needs it (see above). */
function loadMikroOrm(): void {
  if (!asyncContextsUseHooks()) return;
  // Node 22 exports the class through an accessor (it picks the implementation): replaced and restored as it is.
  const exported = Object.getOwnPropertyDescriptor(asyncHooks, 'AsyncLocalStorage')!;
  // Only while MikroORM's modules load (CommonJS: each makes its storage as it is evaluated): every other
  // library, OpenTelemetry's context manager among them, gets Node's own class.
  Object.defineProperty(asyncHooks, 'AsyncLocalStorage', { value: ScopedAsyncLocalStorage, writable: true, enumerable: true, configurable: true });
  try {
    const { RequestContext } = require('@mikro-orm/core') as typeof import('@mikro-orm/core');
    (RequestContext as unknown as { storage: AsyncLocalStorage<unknown> }).storage = new AsyncLocalStorage();
  } finally {
    Object.defineProperty(asyncHooks, 'AsyncLocalStorage', exported);
  }
}
loadMikroOrm();

/**
 * Whether MikroORM's transaction storage is a scoped one, or need not be (a runtime without async hooks behind its
 * contexts). False when `@mikro-orm/core` was loaded before this module.
 */
export function ormContextsScoped(): boolean {
  if (!asyncContextsUseHooks()) return true;
  const { TransactionContext } = require('@mikro-orm/core') as typeof import('@mikro-orm/core');
  return (TransactionContext as unknown as { storage: unknown }).storage instanceof ScopedAsyncLocalStorage;
}
