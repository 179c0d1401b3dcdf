/**
 * The webhook worker every instance runs. It only runs the rules of src/domain/webhook-queue.service.ts:
 * it relays new events into deliveries, then gives each endpoint with attempts due a lane of its own —
 * one attempt at a time per endpoint (the endpoint's queue is leased, so across every instance too),
 * each lane independent of the others, so a slow, hanging or failing receiver delays only its own
 * endpoint's deliveries and no batch waits for its slowest attempt. Lanes are bounded per instance
 * (`concurrency`) and per account (`accountConcurrency`), and handed out in turns across accounts
 * (dueEndpoints), so one account cannot take every place. A lane gives its place back after a few
 * attempts, so a long queue takes turns with the others.
 *
 * When to look (src/events/work-loop.ts): at once when something commits in this process or, on
 * PostgreSQL, when another instance announces its commits; when a scheduled retry falls due; otherwise a
 * poll for other processes' writes that backs off while nothing happens (WEBHOOK_POLL_MS doubling up
 * to WEBHOOK_POLL_MAX_MS).
 *
 * An instance that dies mid-attempt holds nothing for long: its leases end (timeout + 5 s) and
 * another instance takes the queue over. One that stops cuts its attempts short and gives them back.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Orm } from '../db/orm.js';
import { WebhookQueue, type WebhookAttempt } from '../domain/webhook-queue.service.js';
import type { SqlReader } from '../domain/reader.js';
import { readerFork } from './commit-signal.js';
import { sendWebhook, signature } from './webhook-sender.js';
import { WorkLoop } from './work-loop.js';

const RELAY_BATCH = 200;
/** Attempts a lane makes before it gives its place back (and its endpoint queues again, in turn). */
const LANE_TURN = 10;
/**
 * Woken runs start at least this far apart. Every commit in this process (and on PostgreSQL every
 * instance's event) wakes the worker; a run per wake-up would cost each order a dozen queries more
 * under load. One run picks up everything committed before it (the latency target is 250 ms).
 */
const WAKE_GAP_MS = 50;

export interface WebhookDispatcherOptions {
  allowPrivate: boolean;
  retryScale: number;
  pollMs: number;
  pollMaxMs: number;
  timeoutMs: number;
  /** Attempts in flight at once on this instance, and for one account among them. */
  concurrency: number;
  accountConcurrency: number;
  /** Told of each attempt made (metrics); `lagSeconds` from the event's commit, on success. */
  onAttempt?(outcome: 'succeeded' | 'failed', lagSeconds?: number): void;
  onEndpointDisabled?(): void;
}

export interface WebhookDispatcher {
  /** Something committed: look for work now rather than at the next poll. */
  wake(): void;
  stop(): Promise<void>;
}

export function startWebhookDispatcher(orm: Orm, reader: SqlReader, logger: Logger, options: WebhookDispatcherOptions): WebhookDispatcher {
  const instance = randomUUID();
  const service = () => new WebhookQueue(readerFork(orm), reader, { retryScale: options.retryScale });
  // A claim outlives the attempt's timeout: only a dead holder's runs out.
  const leaseMs = options.timeoutMs + 5000;
  // Stopping cuts in-flight attempts short; their claims are released for another instance (or the next start).
  const shutdown = new AbortController();
  let stopped = false;
  let lanesStarted = 0;
  /** Endpoint id → its account, for each lane running here. */
  const lanes = new Map<number, number>();
  const perAccount = new Map<number, number>();
  const running = new Set<Promise<void>>();

  async function cycle() {
    const queue = service();
    const state = await queue.workState();
    let found = false;
    for (let relayed = state.eventsToRelay ? RELAY_BATCH : 0; relayed === RELAY_BATCH && !stopped; ) {
      relayed = await queue.relayEvents(RELAY_BATCH);
      found ||= relayed > 0;
    }
    const free = options.concurrency - lanes.size;
    if ((found || state.attemptsDue) && free > 0 && !stopped) {
      // More than the free places: some may be skipped (their account is at its share, or a lane here holds them).
      for (const due of await queue.dueEndpoints(free + options.accountConcurrency + lanes.size)) {
        if (lanes.size >= options.concurrency || stopped) break;
        if (lanes.has(due.endpointId) || (perAccount.get(due.accountId) ?? 0) >= options.accountConcurrency) continue;
        found = true;
        startLane(due.endpointId, due.accountId, `${instance}:${++lanesStarted}`);
      }
    }
    // A retry that falls due wakes the worker at its time (one relayed just now is found by the lanes' wake-up).
    // Committed events behind an older transaction still running: look again soon (its end may notify nobody).
    return { found, dueAt: state.nextDueAt?.getTime() ?? null, held: state.eventsWaiting };
  }

  function startLane(endpointId: number, accountId: number, owner: string) {
    lanes.set(endpointId, accountId);
    perAccount.set(accountId, (perAccount.get(accountId) ?? 0) + 1);
    const lane = runLane(endpointId, owner)
      .catch((err: unknown) =>
        logger.warn({ err, webhookId: endpointId }, 'webhooks: a delivery lane failed; its attempts are retried after their lease'),
      )
      .finally(() => {
        lanes.delete(endpointId);
        const left = (perAccount.get(accountId) ?? 1) - 1;
        if (left) perAccount.set(accountId, left);
        else perAccount.delete(accountId);
        running.delete(lane);
        // A place is free, and the endpoint may have more due: look again.
        loop.wake();
      });
    running.add(lane);
  }

  /**
   * Takes the endpoint's queue and makes its due attempts one at a time, up to LANE_TURN, then gives the queue back.
   * A failed attempt ends the turn at once: a receiver that hangs holds a place for one timeout, not for LANE_TURN of
   * them, so its account's other endpoints wait for a place at most one timeout however many of its receivers hang.
   */
  async function runLane(endpointId: number, owner: string) {
    let holding = false;
    try {
      for (let n = 0; n < LANE_TURN && !stopped; n++) {
        const attempt = await service().takeAttempt(endpointId, owner, leaseMs);
        // Nothing due (the queue was given back) or another holder has it.
        holding = attempt !== null;
        if (!attempt || (await deliver(attempt, owner)) !== 'next') return;
      }
    } finally {
      if (holding) await service().releaseQueue(endpointId, owner);
    }
  }

  /** Makes one attempt and records it: whether the lane goes on, ends its turn (the receiver failed), or stops (the worker is stopping; the attempt was given back). */
  async function deliver(attempt: WebhookAttempt, owner: string): Promise<'next' | 'failed' | 'stopped'> {
    const started = new Date();
    const timestamp = Math.floor(started.getTime() / 1000);
    const id = String(attempt.eventId);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'Petstore-Webhooks/1.0',
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': attempt.secrets.map((s) => signature(s, id, timestamp, attempt.body)).join(' '),
    };
    const trace = { traceparent: attempt.traceparent, eventId: attempt.eventId, endpointId: attempt.endpointId, attempt: attempt.attempt };
    const result = await sendWebhook(attempt.url, headers, attempt.body, {
      allowPrivate: options.allowPrivate,
      timeoutMs: options.timeoutMs,
      signal: shutdown.signal,
      trace,
    });
    if (result.aborted) {
      await service().releaseAttempt(attempt.deliveryId, owner);
      return 'stopped';
    }
    const { recorded, disabled } = await service().recordAttempt(attempt, owner, result, started);
    // The claim ran out and another instance took the attempt over: its outcome counts.
    if (!recorded) return 'next';
    options.onAttempt?.(result.ok ? 'succeeded' : 'failed', result.ok ? (Date.now() - attempt.eventCreatedAt.getTime()) / 1000 : undefined);
    if (disabled) {
      options.onEndpointDisabled?.();
      logger.warn(
        { webhookId: attempt.endpointId, eventId: attempt.eventId },
        'webhooks: endpoint disabled after its retry schedule was spent',
      );
    }
    return result.ok ? 'next' : 'failed';
  }

  const loop = new WorkLoop(cycle, { minMs: options.pollMs, maxMs: options.pollMaxMs, wakeGapMs: WAKE_GAP_MS }, (err) =>
    logger.warn({ err }, 'webhooks: looking for work failed; retrying at the next poll'),
  );
  loop.start();

  return {
    wake: () => loop.wake(),
    async stop() {
      stopped = true;
      shutdown.abort();
      await loop.stop();
      await Promise.all([...running]);
    },
  };
}
