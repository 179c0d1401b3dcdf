/**
 * MikroORM's async contexts, switched on only while they are in use.
 *
 * MikroORM keeps four `AsyncLocalStorage`s (the transaction's and the request's entity manager, "inside a flush",
 * the raw fragments of a query) and enters one (`run`) on every flush and every `em.transactional`. On Node 20 and
 * 22, `AsyncLocalStorage` is built on async hooks: from the first `run` on, for the rest of the process's life,
 * every promise anywhere in the process calls into JavaScript as it is created, to copy each enabled storage's
 * value onto it. One write through the ORM (a pet, an account, a webhook) was enough: after it, a REST read by ids
 * cost 10–12% more instructions (19 promises a read; a GraphQL read has 47), a read in a process that never wrote
 * did not (docs/PERFORMANCE.md). Node 24 keeps these contexts in V8's own continuation data instead (as Node 22 does
 * with `--experimental-async-context-frame`): no hook, nothing to switch off, and this module does nothing there.
 *
 * On the hook-based runtimes, MikroORM is loaded here first, with its storages made as `ScopedAsyncLocalStorage`:
 * each switches itself off (`disable()`) when the last of its `run`s has settled, and on again at the next `run`
 * (as `AsyncLocalStorage.run` always does). A storage read outside every `run` of its own returns nothing, which
 * is what MikroORM's storages hold there anyway: nothing of the service runs ORM work outside the transaction or
 * flush that entered it, and the forks the domain uses do not look up a context (`useContext` is off on forks).
 *
 * Import this module before anything that loads `@mikro-orm/core` (src/main.ts and src/app.ts do so first);
 * `createOrm` refuses to start when MikroORM was loaded before it (`ormContextsScoped`).
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

  /** No end to wait for: the storage stays on from here (MikroORM's `RequestContext.enter`, which the service does not use). */
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
 * Whether this process's `AsyncLocalStorage` is built on async hooks: Node before 24, unless Node 22/23 runs with
 * `--experimental-async-context-frame`, or Node 24 and later with `--no-async-context-frame`.
 */
export function asyncContextsUseHooks(version = process.versions.node, flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)]): boolean {
  const major = Number(version.split('.')[0]);
  if (major >= 24) return flags.includes('--no-async-context-frame');
  return !flags.includes('--experimental-async-context-frame');
}

const require = createRequire(import.meta.url);

/** MikroORM's own storages, scoped when this runtime needs it (see above). */
function loadMikroOrm(): void {
  if (!asyncContextsUseHooks()) return;
  const exports = asyncHooks as { AsyncLocalStorage: typeof AsyncLocalStorage };
  const original = exports.AsyncLocalStorage;
  // Only while MikroORM's modules load (CommonJS: each makes its storage as it is evaluated): every other
  // library, OpenTelemetry's context manager among them, gets Node's own class.
  exports.AsyncLocalStorage = ScopedAsyncLocalStorage;
  try {
    require('@mikro-orm/core');
  } finally {
    exports.AsyncLocalStorage = original;
  }
}
loadMikroOrm();

/**
 * Whether MikroORM's storages are the scoped ones, or need not be (a runtime without async hooks behind its contexts).
 * False when `@mikro-orm/core` was loaded before this module.
 */
export function ormContextsScoped(): boolean {
  if (!asyncContextsUseHooks()) return true;
  const { TransactionContext, RequestContext } = require('@mikro-orm/core') as typeof import('@mikro-orm/core');
  return [TransactionContext, RequestContext].every((context) => (context as unknown as { storage: unknown }).storage instanceof ScopedAsyncLocalStorage);
}
