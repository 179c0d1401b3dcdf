import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { raw } from '@mikro-orm/core';
import { BaseSqlitePlatform, type EntityManager } from '@mikro-orm/knex';
import { Account, Event, WebhookDelivery, WebhookEndpoint } from './entities/index.js';
import { DomainError, notFound, validationFailed } from './errors.js';
import type { Actor } from './actor.js';
import { limitsFor } from './plans.js';
import { findPage, type Page, type PageRequest } from './pagination.js';
import { EVENT_TYPES, canSee, newestPosition, parseEventTypes, positionOf, readEvents, readableEvents, toEventView } from './events.service.js';
import { isAfter, type EventPosition } from './event-position.js';
import { eventRepresentation } from './representations.js';
import type { WebhookDeliveryView, WebhookEndpointView, WebhookEndpointWithSecretView } from './views.js';
import * as v from './validate.js';


/** How long the secret before a rotation keeps signing deliveries (beside the new one), so receivers can switch over. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600 * 1000;

export interface WebhookPolicy {
  /** Development and tests: http and private (loopback, LAN) addresses are allowed. */
  allowPrivate: boolean;
  /** Factor on the retry schedule (WEBHOOK_RETRY_SCALE; default 1). */
  retryScale?: number;
}

/** Seconds before each retry (Standard Webhooks' suggested schedule), scaled by WEBHOOK_RETRY_SCALE; then the endpoint is disabled. */
export const RETRY_SCHEDULE_S = [5, 30, 120, 600, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 24 * 3600];

/** ±20 % jitter, so receivers that failed together are not retried together. */
export const retryDelayMs = (retry: number, scale: number, random = Math.random()) => RETRY_SCHEDULE_S[retry - 1]! * 1000 * scale * (0.8 + 0.4 * random);

export interface WebhookInput {
  url?: unknown;
  events?: unknown;
  enabled?: unknown;
}

const blocks = (cidrs: string[]) => cidrs.map((c) => ipaddr.parseCIDR(c));

/** The space a public unicast address may be in: IPv4 below 224.0.0.0 (multicast and reserved above it), IPv6's global unicast 2000::/3. */
const PUBLIC_SPACE = {
  ipv4: blocks(['0.0.0.0/1', '128.0.0.0/2', '192.0.0.0/3']),
  ipv6: blocks(['2000::/3']),
};

/**
 * Blocks inside that space that are not public (IANA's special-purpose address registries): this
 * network, private, shared (CGNAT), loopback, link-local, protocol assignments, documentation,
 * 6to4 relays, benchmarking; IPv6 protocol assignments (Teredo among them), documentation and 6to4
 * (which embeds any IPv4 address).
 */
const NOT_PUBLIC = {
  ipv4: blocks([
    '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24', '192.0.2.0/24',
    '192.31.196.0/24', '192.52.193.0/24', '192.88.99.0/24', '192.168.0.0/16', '192.175.48.0/24', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24',
  ]),
  ipv6: blocks(['2001::/23', '2001:db8::/32', '2002::/16', '3fff::/20']),
};

/**
 * An address a webhook may reach: public unicast only. The address must lie in the space a public
 * unicast address may be in and outside every special-purpose block (an allow-list: a spelling
 * nobody listed is refused, not let through); an IPv6 address that carries an IPv4 one (IPv4-mapped
 * `::ffff:a.b.c.d`, IPv4-compatible `::a.b.c.d`) is judged by the IPv4 address it reaches.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  let ip: ipaddr.IPv4 | ipaddr.IPv6 = ipaddr.parse(address);
  if (ip.kind() === 'ipv6') {
    const v6 = ip as ipaddr.IPv6;
    if (v6.isIPv4MappedAddress()) ip = v6.toIPv4Address();
    else if (v6.parts.slice(0, 6).every((part) => part === 0)) ip = new ipaddr.IPv4(v6.toByteArray().slice(12));
  }
  const within = (list: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>) => list.some((range) => ip.kind() === range[0].kind() && ip.match(range));
  const kind = ip.kind();
  return within(PUBLIC_SPACE[kind]) && !within(NOT_PUBLIC[kind]) && ip.range() === 'unicast';
}

/** Names that never resolve to a public address (RFC 6761 and its successors), besides single labels. */
const NOT_PUBLIC_NAMES = /(^|\.)(localhost|local|internal|home\.arpa|invalid|test|onion)$/;

/**
 * A host name a webhook may be registered with: a dotted name outside the special-use names. A
 * trailing dot (`localhost.`, the same name written fully qualified) is ignored. Where it resolves is
 * checked again at every connection (src/events/webhook-sender.ts).
 */
export function isPublicName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name.includes('.') && !NOT_PUBLIC_NAMES.test(name);
}

export const newWebhookSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

export const toEndpointView = (e: WebhookEndpoint): WebhookEndpointView => ({
  id: e.id,
  url: e.url,
  events: JSON.parse(e.events) as string[],
  enabled: e.enabled,
  disabledReason: e.disabledReason,
  createdAt: e.createdAt,
});

export const toDeliveryView = (d: WebhookDelivery): WebhookDeliveryView => ({
  id: d.id,
  webhookId: d.endpoint.id,
  eventId: d.eventId,
  eventType: d.eventType,
  attempt: d.attempt,
  status: d.status,
  scheduledAt: d.scheduledAt,
  attemptedAt: d.attemptedAt,
  responseStatus: d.responseStatus,
  durationMs: d.durationMs,
  error: d.error,
});

/** One attempt to make, as the worker gets it: where to, the body, and the secrets that sign it. */
export interface WebhookAttempt {
  deliveryId: number;
  endpointId: number;
  eventId: number;
  attempt: number;
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

/** A time read by raw SQL: epoch milliseconds (SQLite, as a number or text) or a Date (PostgreSQL). */
/** The earliest start position among enabled endpoints (one parameter: true). */
const FIRST_START = 'select start_after_txid, start_after_event_id from webhook_endpoints where enabled = ? order by start_after_txid, start_after_event_id limit 1';

const fromSqlTime = (value: unknown): Date | null =>
  value === null || value === undefined ? null : new Date(typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : (value as number | string | Date));

/**
 * Webhook endpoints and their delivery log. An endpoint belongs to the account that registered it:
 * another account's endpoint, staff's included, is NOT_FOUND (its secret and traffic are the owner's).
 */
export class WebhooksService {
  constructor(
    private readonly em: EntityManager,
    private readonly policy: WebhookPolicy,
  ) {}

  async listWebhooks(actor: Actor, page: PageRequest): Promise<Page<WebhookEndpointView>> {
    return findPage(this.em, WebhookEndpoint, { account: actor.accountId }, page, toEndpointView);
  }

  async getWebhook(actor: Actor, id: number): Promise<WebhookEndpointView> {
    return toEndpointView(await this.ownEndpoint(actor, id));
  }

  async createWebhook(actor: Actor, input: WebhookInput): Promise<WebhookEndpointWithSecretView> {
    const url = this.checkedUrl(input.url);
    const events = this.checkedEvents(input.events);
    return this.em.transactional(async (em) => {
      // Counting under the account row's lock keeps two concurrent creations from both passing the cap.
      await em.nativeUpdate(Account, { id: actor.accountId }, { name: raw('name') });
      const count = await em.count(WebhookEndpoint, { account: actor.accountId });
      const cap = limitsFor(actor.plan, actor.limits).webhookEndpoints;
      if (count >= cap) {
        throw new DomainError('PLAN_LIMIT_REACHED', `The ${actor.plan} plan allows ${cap} webhook endpoint${cap === 1 ? '' : 's'}; delete one or upgrade the plan.`);
      }
      const endpoint = new WebhookEndpoint(em.getReference(Account, actor.accountId), url, JSON.stringify(events), newWebhookSecret(), await newestPosition(em));
      em.persist(endpoint);
      await em.flush();
      return { ...toEndpointView(endpoint), secret: endpoint.secret };
    });
  }

  async updateWebhook(actor: Actor, id: number, input: WebhookInput): Promise<WebhookEndpointView> {
    if (input.url === undefined && input.events === undefined && input.enabled === undefined) {
      throw validationFailed('Give at least one property to change.', [{ path: 'input', message: 'is empty' }]);
    }
    const endpoint = await this.ownEndpoint(actor, id);
    if (input.url !== undefined) endpoint.url = this.checkedUrl(input.url);
    if (input.events !== undefined) endpoint.events = JSON.stringify(this.checkedEvents(input.events));
    if (input.enabled !== undefined) {
      if (typeof input.enabled !== 'boolean') throw validationFailed('enabled must be a boolean.', [{ path: 'enabled', message: 'must be a boolean' }]);
      endpoint.enabled = input.enabled;
      if (input.enabled) endpoint.disabledReason = null;
    }
    await this.em.flush();
    return toEndpointView(endpoint);
  }

  async deleteWebhook(actor: Actor, id: number): Promise<void> {
    const endpoint = await this.ownEndpoint(actor, id);
    await this.em.nativeDelete(WebhookEndpoint, { id: endpoint.id });
  }

  /** A new secret, shown once; the previous one keeps signing beside it for 24 hours. */
  async rotateSecret(actor: Actor, id: number): Promise<WebhookEndpointWithSecretView> {
    const endpoint = await this.ownEndpoint(actor, id);
    endpoint.previousSecret = endpoint.secret;
    endpoint.previousSecretExpiresAt = new Date(Date.now() + PREVIOUS_SECRET_GRACE_MS);
    endpoint.secret = newWebhookSecret();
    await this.em.flush();
    return { ...toEndpointView(endpoint), secret: endpoint.secret };
  }

  /** Every attempt, oldest first. */
  async listDeliveries(actor: Actor, webhookId: number, page: PageRequest): Promise<Page<WebhookDeliveryView>> {
    const endpoint = await this.ownEndpoint(actor, webhookId);
    return findPage(this.em, WebhookDelivery, { endpoint: endpoint.id }, page, toDeliveryView);
  }

  /**
   * Sends a delivery's event again, now, as a new first attempt; costs what any request costs (1).
   * At most one delivery of an event is queued per endpoint: while one is pending (a retry waiting
   * for its time included), that one is returned, brought forward to now, and nothing is added. A
   * disabled endpoint sends nothing: WEBHOOK_DISABLED (re-enable it first).
   */
  async redeliver(actor: Actor, webhookId: number, deliveryId: number): Promise<WebhookDeliveryView> {
    const endpointId = v.id(webhookId, 'webhookId');
    const id = v.id(deliveryId, 'deliveryId');
    return this.em.transactional(async (em) => {
      // A write first: the endpoint row's lock (SQLite: the write lock) lets one redelivery at a time look for a pending one.
      if (!(await em.nativeUpdate(WebhookEndpoint, { id: endpointId, account: actor.accountId }, { url: raw('url') }))) throw notFound('Webhook', endpointId);
      const endpoint = await em.findOneOrFail(WebhookEndpoint, { id: endpointId });
      const original = await em.findOne(WebhookDelivery, { id, endpoint: endpoint.id });
      if (!original) throw notFound('Delivery', id);
      if (!endpoint.enabled) {
        throw new DomainError(
          'WEBHOOK_DISABLED',
          `Webhook ${endpoint.id} is disabled${endpoint.disabledReason ? ` (${endpoint.disabledReason})` : ''}; nothing is sent to it. PATCH {"enabled": true}, then redeliver.`,
        );
      }
      if (!(await em.count(Event, { id: original.eventId }))) {
        throw new DomainError('EVENT_EXPIRED', `Event ${original.eventId} is older than 30 days and no longer kept.`);
      }
      const now = new Date();
      const pending = await em.findOne(WebhookDelivery, { endpoint: endpoint.id, eventId: original.eventId, status: 'pending' }, { orderBy: { id: 'asc' } });
      if (pending) {
        if (pending.scheduledAt > now) pending.scheduledAt = now;
        await em.flush();
        return toDeliveryView(pending);
      }
      const delivery = new WebhookDelivery(endpoint, original.eventId, original.eventType, 1, now);
      em.persist(delivery);
      await em.flush();
      return toDeliveryView(delivery);
    });
  }

  // The delivery queue, run by each instance's worker (src/events/webhook-dispatcher.ts): the worker
  // decides when and how many; which deliveries exist, who holds a queue, what an outcome means
  // (retry, give up, disable) are the rules below.

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
      const [relay] = await tx.execute<Array<{ last_txid: number | string; last_event_id: number | string; start_txid: number | string | null; start_id: number | string | null }>>(
        `select r.last_txid, r.last_event_id, s.start_after_txid as start_txid, s.start_after_event_id as start_id from event_relays r
           left join (${FIRST_START}) s on 1 = 1 where r.name = ?`,
        [true, RELAY],
      );
      if (!relay || relay.start_txid === null) return 0;
      // Events before every endpoint's start concern none of them.
      const relayed = { txid: Number(relay.last_txid), id: Number(relay.last_event_id) };
      const start = { txid: Number(relay.start_txid), id: Number(relay.start_id) };
      const events = await readEvents(tx, isAfter(start, relayed) ? start : relayed, batch, { fields: ['id', 'txid', 'type', 'accountId'] });
      if (!events.length) return 0;
      const last = positionOf(events.at(-1)!);
      const endpoints = await tx.find(
        WebhookEndpoint,
        { enabled: true, $or: [{ startAfterTxid: { $lt: last.txid } }, { startAfterTxid: last.txid, startAfterEventId: { $lt: last.id } }] },
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
            rows.push({ endpoint: endpoint.id, eventId: event.id, eventType: event.type, attempt: 1, status: 'pending' as const, scheduledAt: now, createdAt: now });
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
   * with many busy endpoints is served beside the others, never before them all.
   */
  async dueEndpoints(limit: number, now = new Date()): Promise<DueEndpoint[]> {
    const at = this.sqlTime(now);
    const rows = await this.em.execute<Array<{ endpoint_id: number | string; account_id: number | string }>>(
      `select endpoint_id, account_id from (
         select d.endpoint_id, e.account_id, min(d.scheduled_at) as due,
                row_number() over (partition by e.account_id order by min(d.scheduled_at), d.endpoint_id) as turn
           from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
          where d.status = 'pending' and d.scheduled_at <= ? and (d.claimed_until is null or d.claimed_until < ?)
            and (e.lease_until is null or e.lease_until < ?)
          group by d.endpoint_id, e.account_id
       ) q order by turn, due, endpoint_id limit ?`,
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
  async workState(now = new Date()): Promise<{ eventsToRelay: boolean; eventsWaiting: boolean; attemptsDue: boolean; nextDueAt: Date | null }> {
    const at = this.sqlTime(now);
    const newest = `select txid, id from events${readableEvents(this.em)} order by txid desc, id desc limit 1`;
    const committed = 'select txid, id from events order by txid desc, id desc limit 1';
    const [state] = await this.em.execute<Array<Record<'relayed_txid' | 'relayed_id' | 'newest_txid' | 'newest_id' | 'committed_txid' | 'committed_id' | 'start_txid' | 'start_id', number | string | null> & { due: unknown; next: unknown }>>(
      `select r.last_txid as relayed_txid, r.last_event_id as relayed_id, n.txid as newest_txid, n.id as newest_id,
         c.txid as committed_txid, c.id as committed_id,
         s.start_after_txid as start_txid, s.start_after_event_id as start_id,
         (select min(scheduled_at) from webhook_deliveries where status = 'pending' and scheduled_at <= ?) as due,
         (select min(scheduled_at) from webhook_deliveries where status = 'pending' and scheduled_at > ?) as next
       from (select 1 as one) o left join event_relays r on r.name = ? left join (${newest}) n on 1 = 1 left join (${committed}) c on 1 = 1 left join (${FIRST_START}) s on 1 = 1`,
      [at, at, RELAY, true],
    );
    const position = (txid: unknown, id: unknown): EventPosition => ({ txid: Number(txid ?? 0), id: Number(id ?? 0) });
    return {
      eventsToRelay:
        !!state &&
        state.start_txid !== null &&
        state.newest_id !== null &&
        isAfter(position(state.newest_txid, state.newest_id), position(state.relayed_txid, state.relayed_id)) &&
        isAfter(position(state.newest_txid, state.newest_id), position(state.start_txid, state.start_id)),
      eventsWaiting: !!state && state.start_txid !== null && isAfter(position(state.committed_txid, state.committed_id), position(state.newest_txid, state.newest_id)),
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
      if (!delivery || !(await this.em.nativeUpdate(WebhookDelivery, { id: delivery.id, ...free }, { claimedBy: owner, claimedUntil: until }))) {
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
      if (endpoint.previousSecret && endpoint.previousSecretExpiresAt && endpoint.previousSecretExpiresAt > now) secrets.push(endpoint.previousSecret);
      return {
        deliveryId: delivery.id,
        endpointId,
        eventId: event.id,
        attempt: delivery.attempt,
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
  async recordAttempt(attempt: WebhookAttempt, owner: string, outcome: AttemptOutcome, started: Date): Promise<{ recorded: boolean; disabled: boolean }> {
    // A success is one statement; a failure also schedules what comes next, in the same transaction.
    if (outcome.ok) return { recorded: await this.finish(attempt.deliveryId, owner, outcome, started), disabled: false };
    return this.em.transactional(async (tx) => {
      // The endpoint row's lock first, then the delivery's: the order a deleted endpoint (or account) cascades in.
      // The other order deadlocked on PostgreSQL with a DELETE of the endpoint (it held the endpoint, waited for
      // the delivery; this held the delivery, waited for the endpoint to insert the retry), and one of the two failed.
      if (!(await tx.nativeUpdate(WebhookEndpoint, { id: attempt.endpointId }, { url: raw('url') }))) return { recorded: false, disabled: false };
      const recorded = await new WebhooksService(tx, this.policy).finish(attempt.deliveryId, owner, outcome, started);
      if (!recorded) return { recorded, disabled: false };
      if (attempt.attempt <= RETRY_SCHEDULE_S.length) {
        const next = new Date(Date.now() + retryDelayMs(attempt.attempt, this.policy.retryScale ?? 1));
        const original = await tx.findOneOrFail(WebhookDelivery, { id: attempt.deliveryId });
        tx.persist(new WebhookDelivery(tx.getReference(WebhookEndpoint, attempt.endpointId), attempt.eventId, original.eventType, attempt.attempt + 1, next));
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

  private async ownEndpoint(actor: Actor, id: number): Promise<WebhookEndpoint> {
    const webhookId = v.id(id, 'webhookId');
    const endpoint = await this.em.findOne(WebhookEndpoint, { id: webhookId, account: actor.accountId });
    if (!endpoint) throw notFound('Webhook', webhookId);
    return endpoint;
  }

  private checkedEvents(value: unknown): string[] {
    if (!Array.isArray(value) || value.length === 0 || value.length > EVENT_TYPES.length) {
      throw validationFailed('events must list 1 or more event types.', [{ path: 'events', message: 'must list event types such as order.placed or order.*' }]);
    }
    return parseEventTypes(value, 'events')!;
  }

  /**
   * https only, and no address that is not public, unless the policy allows private ones. This is the
   * first check; the delivery checks the address again when it connects (the name may resolve elsewhere by then).
   */
  private checkedUrl(value: unknown): string {
    const text = v.trimmedText(value, 'url', 2048);
    const refuse = (message: string) => validationFailed(`url ${message}.`, [{ path: 'url', message }]);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw refuse('must be an absolute URL such as https://example.com/hooks');
    }
    if (url.username || url.password) throw refuse('must not carry credentials');
    if (url.protocol !== 'https:' && !(this.policy.allowPrivate && url.protocol === 'http:')) throw refuse('must use https');
    if (!this.policy.allowPrivate) {
      const host = url.hostname.replace(/^\[|\]$/g, '');
      if (isIP(host) ? !isPublicAddress(host) : !isPublicName(host)) throw refuse('must point to a public address');
    }
    return url.toString();
  }
}
