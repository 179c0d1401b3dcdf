/**
 * The webhook worker every instance runs. Each tick it (1) fans new outbox events out into pending
 * deliveries, under the `event_relays` row lock so each event is fanned out once whatever the number
 * of instances, and (2) claims due attempts for a lease (`FOR UPDATE SKIP LOCKED` on PostgreSQL, so
 * each attempt is taken by one instance), sends them, and records the outcome: success, or the next
 * attempt on the retry schedule, or, when the schedule is spent, the endpoint disabled with the reason.
 * An instance that dies mid-attempt holds nothing: another one takes the attempt when the lease ends.
 */
import { randomUUID } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import { BaseSqlitePlatform, type EntityManager } from '@mikro-orm/knex';
import type { Logger } from 'pino';
import type { Orm } from '../db/orm.js';
import { Event, WebhookDelivery, WebhookEndpoint } from '../domain/entities/index.js';
import { canSee, toEventView } from '../domain/events.service.js';
import { eventRepresentation } from '../domain/representations.js';
import { sendWebhook, signature } from './webhook-sender.js';

/** Seconds before each retry (Standard Webhooks' suggested schedule), scaled by WEBHOOK_RETRY_SCALE. */
export const RETRY_SCHEDULE_S = [5, 30, 120, 600, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600];

/** ±20 % jitter, so receivers that failed together are not retried together. */
export const retryDelayMs = (retry: number, scale: number, random = Math.random()) => RETRY_SCHEDULE_S[retry - 1]! * 1000 * scale * (0.8 + 0.4 * random);

/** The relay's row, inserted by the migration that created the table. */
const RELAY = 'webhooks';
const FAN_OUT_BATCH = 200;
const CLAIM_BATCH = 20;
/**
 * Woken ticks start at least this far apart. On PostgreSQL every committed order wakes every
 * instance (NOTIFY); a tick per wake-up would cost each order a few ORM queries more under load.
 * One tick picks up everything committed before it, so a busy instance ticks every 25 ms at most,
 * an idle one at once.
 */
const WAKE_GAP_MS = 25;

export interface WebhookDispatcherOptions {
  allowPrivate: boolean;
  retryScale: number;
  pollMs: number;
  timeoutMs: number;
  /** Told of each attempt made (metrics); `lagSeconds` from the event's commit, on success. */
  onAttempt?(outcome: 'succeeded' | 'failed', lagSeconds?: number): void;
  onEndpointDisabled?(): void;
}

export interface WebhookDispatcher {
  /** Runs one tick now (tests and the delivery benchmark); ticks never overlap. */
  tick(): Promise<void>;
  /** An event committed: look for work now rather than at the next poll (at most one extra tick waits). */
  wake(): void;
  stop(): Promise<void>;
}

export function startWebhookDispatcher(orm: Orm, logger: Logger, options: WebhookDispatcherOptions): WebhookDispatcher {
  const instance = randomUUID();
  const sqlite = orm.em.getPlatform() instanceof BaseSqlitePlatform;
  let stopped = false;
  // Stopping cuts in-flight attempts short; their claims are released for another instance (or the next start).
  const shutdown = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<void> = Promise.resolve();
  let ticks = 0;

  async function fanOut(em: EntityManager) {
    // Reads first, so an idle instance takes no write lock (SQLite has one for the whole database).
    const [state] = await em.execute<Array<{ relayed: number | string | null; newest: number | string | null; start: number | string | null }>>(
      `select (select last_event_id from event_relays where name = ?) as relayed, (select max(id) from events) as newest,
         (select min(start_after_event_id) from webhook_endpoints where enabled = ?) as start`,
      [RELAY, true],
    );
    if (!state || state.start === null || Number(state.newest ?? 0) <= Math.max(Number(state.relayed ?? 0), Number(state.start))) return;
    await em.transactional(async (tx) => {
      // A write first: the relay row's lock (PostgreSQL) or the database's write lock (SQLite) makes instances take turns.
      await tx.execute('update event_relays set last_event_id = last_event_id where name = ?', [RELAY]);
      const [relay] = await tx.execute<Array<{ last_event_id: number | string }>>('select last_event_id from event_relays where name = ?', [RELAY]);
      // Events before every endpoint's start concern none of them.
      const after = Math.max(Number(relay?.last_event_id ?? 0), Number(state.start));
      const events = await tx.find(Event, { id: { $gt: after } }, { orderBy: { id: 'asc' }, limit: FAN_OUT_BATCH, fields: ['id', 'type', 'accountId'] });
      if (!events.length) return;
      const endpoints = await tx.find(WebhookEndpoint, { enabled: true, startAfterEventId: { $lt: events.at(-1)!.id } }, { populate: ['account'] });
      const now = new Date();
      const rows = [];
      for (const endpoint of endpoints) {
        const types = new Set(JSON.parse(endpoint.events) as string[]);
        const owner = { role: endpoint.account.role, accountId: endpoint.account.id };
        for (const event of events) {
          if (event.id > endpoint.startAfterEventId && types.has(event.type) && canSee(owner, event)) {
            rows.push({ endpoint: endpoint.id, eventId: event.id, eventType: event.type, attempt: 1, status: 'pending' as const, scheduledAt: now, createdAt: now });
          }
        }
      }
      if (rows.length) await tx.insertMany(WebhookDelivery, rows);
      await tx.execute('update event_relays set last_event_id = ? where name = ?', [events.at(-1)!.id, RELAY]);
    });
  }

  /** Takes up to CLAIM_BATCH due attempts for this instance until the lease ends. */
  async function claim(em: EntityManager): Promise<{ token: string; deliveries: WebhookDelivery[] }> {
    const token = `${instance}:${++ticks}`;
    const now = new Date();
    const free = { status: 'pending' as const, scheduledAt: { $lte: now }, $or: [{ claimedUntil: null }, { claimedUntil: { $lt: now } }] };
    if (!(await em.count(WebhookDelivery, free))) return { token, deliveries: [] };
    await em.transactional(async (tx) => {
      const qb = tx.createQueryBuilder(WebhookDelivery).select('id').where(free).orderBy({ scheduledAt: 'asc' }).limit(CLAIM_BATCH);
      if (!sqlite) qb.setLockMode(LockMode.PESSIMISTIC_PARTIAL_WRITE);
      const ids = (await qb.execute<Array<{ id: number }>>()).map((r) => r.id);
      if (ids.length) {
        await tx.nativeUpdate(WebhookDelivery, { id: { $in: ids }, ...free }, { claimedBy: token, claimedUntil: new Date(now.getTime() + options.timeoutMs + 5000) });
      }
    });
    const deliveries = await em.find(WebhookDelivery, { claimedBy: token }, { populate: ['endpoint', 'endpoint.account'] });
    return { token, deliveries };
  }

  async function attempt(em: EntityManager, token: string, delivery: WebhookDelivery) {
    const endpoint = delivery.endpoint;
    const event = await em.findOne(Event, { id: delivery.eventId });
    const started = new Date();
    let result;
    if (!event) result = { ok: false, status: null, durationMs: 0, error: 'the event is older than 30 days and no longer kept', final: true };
    else if (!endpoint.enabled) result = { ok: false, status: null, durationMs: 0, error: 'the endpoint is disabled', final: true };
    else {
      const body = JSON.stringify(eventRepresentation(toEventView(event)));
      const timestamp = Math.floor(Date.now() / 1000);
      const id = String(event.id);
      const secrets = [endpoint.secret];
      if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > started) secrets.push(endpoint.previousSecret);
      const headers = {
        'content-type': 'application/json',
        'user-agent': 'Petstore-Webhooks/1.0',
        'webhook-id': id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': secrets.map((s) => signature(s, id, timestamp, body)).join(' '),
      };
      result = { ...(await sendWebhook(endpoint.url, headers, body, { ...options, signal: shutdown.signal })), final: false };
      if (result.aborted) {
        await em.nativeUpdate(WebhookDelivery, { id: delivery.id, claimedBy: token }, { claimedBy: null, claimedUntil: null });
        return;
      }
    }
    await em.transactional(async (tx) => {
      const recorded = await tx.nativeUpdate(
        WebhookDelivery,
        { id: delivery.id, claimedBy: token },
        {
          status: result.ok ? 'succeeded' : 'failed',
          attemptedAt: started,
          responseStatus: result.status,
          durationMs: result.durationMs,
          error: result.error,
          claimedBy: null,
          claimedUntil: null,
        },
      );
      // The lease ran out and another instance took the attempt over: its outcome counts.
      if (!recorded) return;
      options.onAttempt?.(result.ok ? 'succeeded' : 'failed', result.ok && event ? (Date.now() - event.createdAt.getTime()) / 1000 : undefined);
      if (result.ok || result.final) return;
      if (delivery.attempt <= RETRY_SCHEDULE_S.length) {
        const next = new Date(Date.now() + retryDelayMs(delivery.attempt, options.retryScale));
        tx.persist(new WebhookDelivery(tx.getReference(WebhookEndpoint, endpoint.id), delivery.eventId, delivery.eventType, delivery.attempt + 1, next));
        await tx.flush();
      } else {
        const reason = `Disabled at ${new Date().toISOString()}: all ${delivery.attempt} attempts to deliver event ${delivery.eventId} failed (last: ${result.error}). Fix the receiver, then PATCH {"enabled": true}; missed events are in GET /v1/events.`;
        await tx.nativeUpdate(WebhookEndpoint, { id: endpoint.id }, { enabled: false, disabledReason: reason });
        options.onEndpointDisabled?.();
        logger.warn({ webhookId: endpoint.id, eventId: delivery.eventId }, 'webhooks: endpoint disabled after its retry schedule was spent');
      }
    });
  }

  let lastTickAt = 0;
  async function runTick() {
    lastTickAt = performance.now();
    const em = orm.em.fork();
    await fanOut(em);
    // A full batch means more may be due: keep going rather than wait for the next poll.
    for (let full = true; full && !stopped; ) {
      const { token, deliveries } = await claim(orm.em.fork());
      await Promise.all(
        deliveries.map((d) =>
          attempt(orm.em.fork(), token, d).catch((err: unknown) => logger.warn({ err, deliveryId: d.id }, 'webhooks: recording an attempt failed; it is retried after its lease')),
        ),
      );
      full = deliveries.length === CLAIM_BATCH;
    }
  }

  function tick(): Promise<void> {
    current = current.then(() => runTick().catch((err: unknown) => logger.warn({ err }, 'webhooks: tick failed; retrying at the next one')));
    return current;
  }

  const loop = () => {
    if (stopped) return;
    void tick().then(() => {
      if (!stopped) timer = setTimeout(loop, options.pollMs);
    });
  };
  timer = setTimeout(loop, options.pollMs);

  // At most one woken tick waits; it clears the flag when it starts, so a wake during a running tick queues the next.
  let wakePending = false;
  let wakeTimer: NodeJS.Timeout | undefined;
  return {
    tick,
    wake() {
      if (stopped || wakePending) return;
      wakePending = true;
      wakeTimer = setTimeout(() => {
        current = current.then(() => {
          wakePending = false;
          if (stopped) return;
          return runTick().catch((err: unknown) => logger.warn({ err }, 'webhooks: tick failed; retrying at the next one'));
        });
      }, Math.max(0, lastTickAt + WAKE_GAP_MS - performance.now()));
    },
    async stop() {
      stopped = true;
      shutdown.abort();
      clearTimeout(timer);
      clearTimeout(wakeTimer);
      await current;
    },
  };
}
