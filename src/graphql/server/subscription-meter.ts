/**
 * Subscriptions whose pushed answers are charged. graphql-js's `subscribe` with one step added
 * between an event and its execution: the account pays the answer's price (src/rate-limit/cost.ts
 * `pushCost`: the document's cost less the free event) before the document runs, and the answer shows
 * it in `extensions.cost`, as an HTTP answer does. When the gate refuses (the budget ran out, or the
 * key is banned), the subscription's last answer is that refusal and it completes: the socket, and the
 * other subscriptions on it, stay open. The document is not run for a refused event.
 *
 * One account's answers are prepared one at a time on an instance, each after the I/O waiting before it
 * (`setImmediate`): an event that twenty heavy subscriptions of one account follow is twenty turns taken
 * in a row, with other accounts' requests served between them, not one block of twenty executions.
 */
import { createSourceEventStream, execute, type ExecutionArgs, type ExecutionResult } from 'graphql';
import type { Actor } from '../../domain/index.js';
import { pushCost, RateLimitRefusal, type ChargeOptions, type RateLimitGate } from '../../rate-limit/index.js';

/** A pushed answer's charge: refused when the budget is spent, never counted toward a ban. */
const PUSHED: ChargeOptions = Object.freeze({ pushed: true });

/** Who pays for a subscription's pushed answers, and what its document costs. */
export interface PushMeter {
  actor: Actor;
  /** The document's cost under the shared policy (what the same data costs over HTTP). */
  requested: number;
}

export interface MeteredSubscribeOptions {
  gate: RateLimitGate;
  /** The meter of the subscription these arguments run (set up when it was prepared). */
  meterOf(args: ExecutionArgs): PushMeter | undefined;
  /** The last answer of a subscription the gate refused, in the catalogue's error shape. */
  refusal(error: RateLimitRefusal, args: ExecutionArgs): ExecutionResult;
}

/** A replacement for graphql-js's `subscribe` (graphql-ws's `subscribe` option) that charges each pushed answer. */
export function meteredSubscribe({ gate, meterOf, refusal }: MeteredSubscribeOptions) {
  /** Per account, the end of the last answer queued: the next one starts after it. */
  const lanes = new Map<number, Promise<void>>();
  const inLane = async <T>(accountId: number, work: () => Promise<T>): Promise<T> => {
    const before = lanes.get(accountId) ?? Promise.resolve();
    let done!: () => void;
    const tail = new Promise<void>((resolve) => (done = resolve));
    lanes.set(accountId, tail);
    try {
      await before;
      await new Promise((resolve) => setImmediate(resolve));
      return await work();
    } finally {
      done();
      if (lanes.get(accountId) === tail) lanes.delete(accountId);
    }
  };

  return async (args: ExecutionArgs): Promise<AsyncIterableIterator<ExecutionResult> | ExecutionResult> => {
    const source = await createSourceEventStream(args);
    if (!(Symbol.asyncIterator in source)) return source;
    const events = source[Symbol.asyncIterator]();
    const meter = meterOf(args);
    let ended = false;
    const end = async () => {
      ended = true;
      await events.return?.().catch(() => undefined);
    };

    const answer = async (event: unknown): Promise<IteratorResult<ExecutionResult>> => {
      // Completed while it waited for its turn: nothing to charge or run.
      if (ended) return { value: undefined, done: true };
      let cost: { requested: number; charged: number } | undefined;
      if (meter) {
        const charged = pushCost(meter.requested);
        try {
          if (charged > 0) await gate.charge(meter.actor, charged, PUSHED);
        } catch (error) {
          if (!(error instanceof RateLimitRefusal)) throw error;
          await end();
          return { value: refusal(error, args), done: false };
        }
        cost = { requested: meter.requested, charged };
      }
      const result = await execute({ ...args, rootValue: event });
      return { value: cost ? { ...result, extensions: { ...result.extensions, cost } } : result, done: false };
    };

    // Like graphql-js's own mapping, `return` goes straight to the event source: a subscription completed
    // while it waits for an event ends at once, not at the next event.
    const iterator: AsyncIterableIterator<ExecutionResult> = {
      async next() {
        if (ended) return { value: undefined, done: true };
        const next = await events.next();
        if (next.done || ended) return { value: undefined, done: true };
        try {
          return await (meter ? inLane(meter.actor.accountId, () => answer(next.value)) : answer(next.value));
        } catch (error) {
          await end();
          throw error;
        }
      },
      async return() {
        await end();
        return { value: undefined, done: true };
      },
      async throw(error: unknown) {
        await end();
        throw error;
      },
      [Symbol.asyncIterator]() {
        return iterator;
      },
    };
    return iterator;
  };
}
