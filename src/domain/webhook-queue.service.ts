import { raw } from '@mikro-orm/core';
import { BaseSqlitePlatform, type EntityManager } from '@mikro-orm/knex';
import { Event, WebhookDelivery, WebhookEndpoint } from './entities/index.js';
import { canSee, positionOf, readEvents, readableEvents, toEventView } from './events.service.js';
import { isAfter, type EventPosition } from './event-position.js';
import { eventRepresentation } from './representations.js';
import type { SqlReader } from './reader.js';

/** Seconds before each retry (Standard Webhooks' suggested schedule), scaled by WEBHOOK_RETRY_SCALE; then the endpoint is disabled. */
export const RETRY_SCHEDULE_S = [5, 30, 120, 600, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600];

/** ±20 % jitter, so receivers that failed together are not retried together. */
export const retryDelayMs = (retry: number, scale: number, random = Math.random()) =>
  RETRY_SCHEDULE_S[retry - 1]! * 1000 * scale * (0.8 + 0.4 * random);

export interface WebhookQueueOptions {
  /** Factor on the retry schedule (WEBHOOK_RETRY_SCALE; default 1). */
  retryScale?: number;
}

/** One attempt to make, as the worker gets it: where to, the body, and the secrets that sign it. */
export interface WebhookAttempt {
  deliveryId: number;
  endpointId: number;
  eventId: number;
  attempt: number;
  /** Whether the endpoint's last attempt had failed when this one was taken (a success then clears it). */
  endpointFailing: boolean;
  url: string;
  /** The event as the feed shows it (JSON), the same bytes for every attempt. */
  body: string;
  /** The current secret, and the previous one while its grace period lasts. */
  secrets: string[];
  eventCreatedAt: Date;
  /** The trace context of the change that wrote the event (tracing on): the delivery's span links to it. */
  traceparent: string | null;
}

/** What came of an attempt (src/events/webhook-sender.ts). */
export interface AttemptOutcome {
  ok: boolean;
  status: number | null;
  durationMs: number;
  error: string | null;
}

/** An endpoint with attempts due and its queue free, and the account it belongs to. */
export interface DueEndpoint {
  endpointId: number;
  accountId: number;
}

/** The relay's row in event_relays, inserted by the migration that created the table. */
const RELAY = 'webhooks';

/** The earliest start position among enabled endpoints (`true` written out: libsql cannot bind a boolean). */
const FIRST_START =
  'select start_after_txid, start_after_event_id from webhook_endpoints where enabled = true order by start_after_txid, start_after_event_id limit 1';

/** A time read by raw SQL: epoch milliseconds (SQLite, as a number or text) or a Date (PostgreSQL). */
const fromSqlTime = (value: unknown): Date | null =>
  value === null || value === undefined
    ? null
    : new Date(typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : (value as number | string | Date));

/**
 * The webhook delivery queue, run by each instance's worker (src/events/webhook-dispatcher.ts): the worker decides
 * when and how many; which deliveries exist, who holds a queue, what an outcome means (retry, give up, disable) are
 * the rules here.
 */
export class WebhookQueue {
  constructor(
    private readonly em: EntityManager,
    /** For the worker's poll (`workState`): a statement prepared once, not the ORM's query path on every poll. */
    private readonly reader: SqlReader,
    private readonly options: WebhookQueueOptions = {},
  ) {}

  /**
   * Fans events committed since the last call out into pending deliveries, one per endpoint that
   * subscribed to the type and may see the event (its account's visibility), under the relay row's
   * lock so each event is fanned out once whatever the number of instances. Returns how many events
   * it relayed (at most `batch`; 0: nothing new). A write: call it when workState says events wait.
   */
  async relayEvents(batch: number): Promise<number> {
    return this.em.transactional(async (tx) => {
      // A write first: the relay row's lock (PostgreSQL) or the database's write lock (SQLite) makes instances take turns.
      await tx.execute('update event_relays set last_event_id = last_event_id where name = ?', [RELAY]);
      const [relay] = await tx.execute<
        Array<{
          last_txid: number | string;
          last_event_id: number | string;
          start_txid: number | string | null;
          start_id: number | string | null;
        }>
      >(
        `select r.last_txid, r.last_event_id, s.start_after_txid as start_txid, s.start_after_event_id as start_id from event_relays r
           left join (${FIRST_START}) s on 1 = 1 where r.name = ?`,
        [RELAY],
      );
      if (!relay || relay.start_txid === null) return 0;
      // Events before every endpoint's start concern none of them.
      const relayed = { txid: Number(relay.last_txid), id: Number(relay.last_event_id) };
      const start = { txid: Number(relay.start_txid), id: Number(relay.start_id) };
      const events = await readEvents(tx, isAfter(start, relayed) ? start : relayed, batch, {
        fields: ['id', 'txid', 'type', 'accountId'],
      });
      if (!events.length) return 0;
      const last = positionOf(events.at(-1)!);
      const endpoints = await tx.find(
        WebhookEndpoint,
        {
          enabled: true,
          $or: [{ startAfterTxid: { $lt: last.txid } }, { startAfterTxid: last.txid, startAfterEventId: { $lt: last.id } }],
        },
        { populate: ['account'] },
      );
      const now = new Date();
      const rows = [];
      for (const endpoint of endpoints) {
        const types = new Set(JSON.parse(endpoint.events) as string[]);
        const owner = { role: endpoint.account.role, accountId: endpoint.account.id };
        const from: EventPosition = { txid: endpoint.startAfterTxid, id: endpoint.startAfterEventId };
        for (const event of events) {
          if (isAfter(positionOf(event), from) && types.has(event.type) && canSee(owner, event)) {
            rows.push({
              endpoint: endpoint.id,
              eventId: event.id,
              eventType: event.type,
              attempt: 1,
              status: 'pending' as const,
              scheduledAt: now,
              createdAt: now,
            });
          }
        }
      }
      if (rows.length) await tx.insertMany(WebhookDelivery, rows);
      await tx.execute('update event_relays set last_txid = ?, last_event_id = ? where name = ?', [last.txid, last.id, RELAY]);
      // What was read is only read: nothing for the commit to flush.
      tx.clear();
      return events.length;
    });
  }

  /**
   * Endpoints with an attempt due whose queue nobody holds, at most `limit`, taken in turns across
   * accounts: every account's longest-waiting endpoint before any account's second, so an account
   * with many busy endpoints is served beside the others, never before them all. Within an account, an
   * endpoint whose last attempt failed comes after the others (a receiver that hangs must not take every place
   * its account frees), then by the oldest due attempt's time and its event's age (attempts relayed together
   * share a time).
   */
  async dueEndpoints(limit: number, now = new Date()): Promise<DueEndpoint[]> {
    const at = this.sqlTime(now);
    const rows = await this.em.execute<Array<{ endpoint_id: number | string; account_id: number | string }>>(
      `select endpoint_id, account_id from (
         select d.endpoint_id, e.account_id, min(d.scheduled_at) as due, min(d.event_id) as first_event,
                row_number() over (
                  partition by e.account_id order by e.failing, min(d.scheduled_at), min(d.event_id), d.endpoint_id
                ) as turn
           from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
          where d.status = 'pending' and d.scheduled_at <= ? and (d.claimed_until is null or d.claimed_until < ?)
            and (e.lease_until is null or e.lease_until < ?)
          group by d.endpoint_id, e.account_id, e.failing
       ) q order by turn, due, first_event, endpoint_id limit ?`,
      [at, at, at, limit],
    );
    return rows.map((r) => ({ endpointId: Number(r.endpoint_id), accountId: Number(r.account_id) }));
  }

  /**
   * What the worker has to do, in one cheap read (an idle service makes only this one): whether
   * events wait to be relayed, whether committed events wait for an older transaction to end before they
   * may be read (PostgreSQL; see readEvents), whether a pending attempt is due now, and when the next one waiting
   * for its time (a retry, mostly) falls due.
   */
  async workState(
    now = new Date(),
  ): Promise<{ eventsToRelay: boolean; eventsWaiting: boolean; attemptsDue: boolean; nextDueAt: Date | null }> {
    const at = this.sqlTime(now);
    const newest = `select txid, id from events${readableEvents(this.em)} order by txid desc, id desc limit 1`;
    const committed = 'select txid, id from events order by txid desc, id desc limit 1';
    const state = await this.reader.one<
      Record<
        'relayed_txid' | 'relayed_id' | 'newest_txid' | 'newest_id' | 'committed_txid' | 'committed_id' | 'start_txid' | 'start_id',
        number | string | null
      > & { due: unknown; next: unknown }
    >(
      `select r.last_txid as relayed_txid, r.last_event_id as relayed_id, n.txid as newest_txid, n.id as newest_id,
         c.txid as committed_txid, c.id as committed_id,
         s.start_after_txid as start_txid, s.start_after_event_id as start_id,
         (select min(scheduled_at) from webhook_deliveries where status = 'pending' and scheduled_at <= ?) as due,
         (select min(scheduled_at) from webhook_deliveries where status = 'pending' and scheduled_at > ?) as next
       from (select 1 as one) o left join event_relays r on r.name = ? left join (${newest}) n on 1 = 1 left join (${committed}) c on 1 = 1 left join (${FIRST_START}) s on 1 = 1`,
      [at, at, RELAY],
    );
    const position = (txid: unknown, id: unknown): EventPosition => ({ txid: Number(txid ?? 0), id: Number(id ?? 0) });
    return {
      eventsToRelay:
        !!state &&
        state.start_txid !== null &&
        state.newest_id !== null &&
        isAfter(position(state.newest_txid, state.newest_id), position(state.relayed_txid, state.relayed_id)) &&
        isAfter(position(state.newest_txid, state.newest_id), position(state.start_txid, state.start_id)),
      eventsWaiting:
        !!state &&
        state.start_txid !== null &&
        isAfter(position(state.committed_txid, state.committed_id), position(state.newest_txid, state.newest_id)),
      attemptsDue: fromSqlTime(state?.due) !== null,
      nextDueAt: fromSqlTime(state?.next),
    };
  }

  /** Gives the queue back (the holder is done with it for now). */
  async releaseQueue(endpointId: number, owner: string): Promise<void> {
    await this.em.nativeUpdate(WebhookEndpoint, { id: endpointId, leaseOwner: owner }, { leaseOwner: null, leaseUntil: null });
  }

  /**
   * The endpoint's next due attempt, for `owner`: takes the endpoint's queue (one holder at a time
   * across every instance, so a slow receiver holds one place, its own) or renews it, and claims the
   * attempt, both until `leaseMs` from now. Null when another holder has the queue, or when nothing
   * is due (the queue is then given back). An attempt that cannot be made (the event is past its 30
   * days, the endpoint was disabled) is recorded as failed, finally, and the next one is taken. Each
   * statement stands alone (no transaction): the queue's lease is what keeps two holders apart.
   */
  async takeAttempt(endpointId: number, owner: string, leaseMs: number): Promise<WebhookAttempt | null> {
    for (;;) {
      const now = new Date();
      const until = new Date(now.getTime() + leaseMs);
      const held = await this.em.nativeUpdate(
        WebhookEndpoint,
        { id: endpointId, $or: [{ leaseOwner: owner }, { leaseUntil: null }, { leaseUntil: { $lt: now } }] },
        { leaseOwner: owner, leaseUntil: until },
      );
      if (!held) return null;
      const free = { $or: [{ claimedUntil: null }, { claimedUntil: { $lt: now } }] };
      const [delivery] = await this.em.find(
        WebhookDelivery,
        { endpoint: endpointId, status: 'pending', scheduledAt: { $lte: now }, ...free },
        { orderBy: { scheduledAt: 'asc', id: 'asc' }, limit: 1, populate: ['endpoint'] },
      );
      if (
        !delivery ||
        // The attempt number read is the one claimed: a redelivery that made it a first attempt meanwhile wins.
        !(await this.em.nativeUpdate(
          WebhookDelivery,
          { id: delivery.id, attempt: delivery.attempt, ...free },
          { claimedBy: owner, claimedUntil: until },
        ))
      ) {
        await this.releaseQueue(endpointId, owner);
        return null;
      }
      const endpoint = delivery.endpoint;
      const event = await this.em.findOne(Event, { id: delivery.eventId });
      const cannot = !event ? 'the event is older than 30 days and no longer kept' : !endpoint.enabled ? 'the endpoint is disabled' : null;
      if (cannot || !event) {
        await this.finish(delivery.id, owner, { ok: false, status: null, durationMs: 0, error: cannot }, now);
        continue;
      }
      const secrets = [endpoint.secret];
      if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now)
        secrets.push(endpoint.previousSecret);
      return {
        deliveryId: delivery.id,
        endpointId,
        eventId: event.id,
        attempt: delivery.attempt,
        endpointFailing: endpoint.failing,
        url: endpoint.url,
        body: JSON.stringify(eventRepresentation(toEventView(event))),
        secrets,
        eventCreatedAt: event.createdAt,
        traceparent: event.traceparent,
      };
    }
  }

  /**
   * Records an attempt's outcome: on failure the next attempt is scheduled (the retry schedule with
   * jitter, scaled by WEBHOOK_RETRY_SCALE), and once the schedule is spent the endpoint is disabled
   * with the reason. `recorded` is false when the claim had run out and another holder took the
   * attempt over (its outcome counts, not this one).
   */
  async recordAttempt(
    attempt: WebhookAttempt,
    owner: string,
    outcome: AttemptOutcome,
    started: Date,
  ): Promise<{ recorded: boolean; disabled: boolean }> {
    // A success is one statement (and one more to clear a failing endpoint); a failure also marks the endpoint
    // failing and schedules what comes next, in the same transaction.
    if (outcome.ok) {
      const recorded = await this.finish(attempt.deliveryId, owner, outcome, started);
      if (recorded && attempt.endpointFailing) await this.em.nativeUpdate(WebhookEndpoint, { id: attempt.endpointId }, { failing: false });
      return { recorded, disabled: false };
    }
    return this.em.transactional(async (tx) => {
      // The endpoint row's lock first, then the delivery's: the order a deleted endpoint (or account) cascades in.
      // The other order deadlocked on PostgreSQL with a DELETE of the endpoint (it held the endpoint, waited for
      // the delivery; this held the delivery, waited for the endpoint to insert the retry), and one of the two failed.
      if (!(await tx.nativeUpdate(WebhookEndpoint, { id: attempt.endpointId }, { url: raw('url') })))
        return { recorded: false, disabled: false };
      const recorded = await new WebhookQueue(tx, this.reader, this.options).finish(attempt.deliveryId, owner, outcome, started);
      // Taken over by another holder: its outcome counts, this one marks nothing.
      if (!recorded) return { recorded, disabled: false };
      await tx.nativeUpdate(WebhookEndpoint, { id: attempt.endpointId }, { failing: true });
      if (attempt.attempt <= RETRY_SCHEDULE_S.length) {
        const next = new Date(Date.now() + retryDelayMs(attempt.attempt, this.options.retryScale ?? 1));
        const original = await tx.findOneOrFail(WebhookDelivery, { id: attempt.deliveryId });
        tx.persist(
          new WebhookDelivery(
            tx.getReference(WebhookEndpoint, attempt.endpointId),
            attempt.eventId,
            original.eventType,
            attempt.attempt + 1,
            next,
          ),
        );
        await tx.flush();
        return { recorded, disabled: false };
      }
      const reason = `Disabled at ${new Date().toISOString()}: all ${attempt.attempt} attempts to deliver event ${attempt.eventId} failed (last: ${outcome.error}). Fix the receiver, then PATCH {"enabled": true}; missed events are in GET /v1/events.`;
      await tx.nativeUpdate(WebhookEndpoint, { id: attempt.endpointId }, { enabled: false, disabledReason: reason });
      return { recorded, disabled: true };
    });
  }

  /** An attempt cut short by its worker stopping says nothing about the receiver: the claim is given back, nothing recorded. */
  async releaseAttempt(deliveryId: number, owner: string): Promise<void> {
    await this.em.nativeUpdate(WebhookDelivery, { id: deliveryId, claimedBy: owner }, { claimedBy: null, claimedUntil: null });
  }

  private async finish(deliveryId: number, owner: string, outcome: AttemptOutcome, started: Date): Promise<boolean> {
    const recorded = await this.em.nativeUpdate(
      WebhookDelivery,
      { id: deliveryId, claimedBy: owner },
      {
        status: outcome.ok ? 'succeeded' : 'failed',
        attemptedAt: started,
        responseStatus: outcome.status,
        durationMs: outcome.durationMs,
        error: outcome.error,
        claimedBy: null,
        claimedUntil: null,
      },
    );
    return recorded === 1;
  }

  /** A time as raw SQL compares it with the ORM's stored dates (SQLite: epoch milliseconds). */
  private sqlTime(date: Date): Date | number {
    return this.em.getPlatform() instanceof BaseSqlitePlatform ? date.getTime() : date;
  }
}
