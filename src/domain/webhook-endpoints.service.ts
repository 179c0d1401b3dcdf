import { randomBytes } from 'node:crypto';
import { raw } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Account, Event, WebhookDelivery, WebhookEndpoint } from './entities/index.js';
import { aboutResource, DomainError, notFound, validationFailed } from './errors.js';
import type { Actor } from './actor.js';
import { limitsFor } from './plans.js';
import { findPage, type Page, type PageRequest } from './pagination.js';
import { EVENT_TYPES, newestPosition, parseEventTypes } from './events.service.js';
import { checkedWebhookUrl } from './webhook-addresses.js';
import type { WebhookDeliveryView, WebhookEndpointView, WebhookEndpointWithSecretView } from './views.js';
import * as v from './validate.js';

/** How long the secret before a rotation keeps signing deliveries (beside the new one), so receivers can switch over. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600 * 1000;

export interface WebhookPolicy {
  /** Development and tests: http and private (loopback, LAN) addresses are allowed. */
  allowPrivate: boolean;
}

export interface WebhookInput {
  url?: unknown;
  events?: unknown;
  enabled?: unknown;
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

/**
 * Webhook endpoints and their delivery log, as their owner manages them. An endpoint belongs to the account that
 * registered it: another account's endpoint, staff's included, is NOT_FOUND (its secret and traffic are the owner's).
 * The worker's side of the deliveries is src/domain/webhook-queue.service.ts.
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
        throw new DomainError(
          'PLAN_LIMIT_REACHED',
          `The ${actor.plan} plan allows ${cap} webhook endpoint${cap === 1 ? '' : 's'}; delete one or upgrade the plan.`,
        );
      }
      const endpoint = new WebhookEndpoint(
        em.getReference(Account, actor.accountId),
        url,
        JSON.stringify(events),
        newWebhookSecret(),
        await newestPosition(em),
      );
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
      if (typeof input.enabled !== 'boolean')
        throw validationFailed('enabled must be a boolean.', [{ path: 'enabled', message: 'must be a boolean' }]);
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
  /**
   * A new secret; the one it replaces still signs for PREVIOUS_SECRET_GRACE_MS (one previous secret is kept: a second
   * rotation within that time replaces it). Written only over the secret it read, so of two rotations at once the
   * second builds on the first: each caller's secret signs, none is lost unseen.
   */
  async rotateSecret(actor: Actor, id: number): Promise<WebhookEndpointWithSecretView> {
    const endpoint = await this.ownEndpoint(actor, id);
    for (;;) {
      const replaced = endpoint.secret;
      const secret = newWebhookSecret();
      const previousSecretExpiresAt = new Date(Date.now() + PREVIOUS_SECRET_GRACE_MS);
      const written = await this.em.nativeUpdate(
        WebhookEndpoint,
        { id: endpoint.id, secret: replaced },
        { secret, previousSecret: replaced, previousSecretExpiresAt },
      );
      if (written === 1) {
        Object.assign(endpoint, { secret, previousSecret: replaced, previousSecretExpiresAt });
        return { ...toEndpointView(endpoint), secret };
      }
      // Another rotation came first: start from its secret (or the endpoint was deleted meanwhile).
      if (!(await this.em.refresh(endpoint))) throw notFound('Webhook', endpoint.id);
    }
  }

  /** Every attempt, oldest first. */
  async listDeliveries(actor: Actor, webhookId: number, page: PageRequest): Promise<Page<WebhookDeliveryView>> {
    const endpoint = await this.ownEndpoint(actor, webhookId);
    return findPage(this.em, WebhookDelivery, { endpoint: endpoint.id }, page, toDeliveryView);
  }

  /** One delivery attempt to one of the caller's endpoints (another account's: NOT_FOUND). */
  async getDelivery(actor: Actor, deliveryId: number): Promise<WebhookDeliveryView> {
    const id = v.id(deliveryId, 'id');
    const delivery = await this.em.findOne(WebhookDelivery, { id, endpoint: { account: actor.accountId } });
    if (!delivery) throw notFound('Delivery', id);
    return toDeliveryView(delivery);
  }

  /**
   * Sends a delivery's event again, now, as a new first attempt; costs what any request costs (1).
   * At most one delivery of an event is queued per endpoint: while one is pending (a retry waiting
   * for its time included), that one is returned, brought forward to now and counted as a first attempt
   * again (unless a worker is making it), and nothing is added: redelivering to a receiver still down
   * restarts its retry schedule rather than using it up. A disabled endpoint sends nothing: WEBHOOK_DISABLED.
   */
  async redeliver(actor: Actor, webhookId: number, deliveryId: number): Promise<WebhookDeliveryView> {
    const endpointId = v.id(webhookId, 'webhookId');
    const id = v.id(deliveryId, 'deliveryId');
    return this.em.transactional(async (em) => {
      // A write first: the endpoint row's lock (SQLite: the write lock) lets one redelivery at a time look for a pending one.
      if (!(await em.nativeUpdate(WebhookEndpoint, { id: endpointId, account: actor.accountId }, { url: raw('url') })))
        throw notFound('Webhook', endpointId);
      const endpoint = await em.findOneOrFail(WebhookEndpoint, { id: endpointId });
      const original = await em.findOne(WebhookDelivery, { id, endpoint: endpoint.id });
      if (!original) throw notFound('Delivery', id);
      if (!endpoint.enabled) {
        const reason = endpoint.disabledReason ? ` (${endpoint.disabledReason})` : '';
        throw aboutResource(
          'WEBHOOK_DISABLED',
          'Webhook',
          endpoint.id,
          ` is disabled${reason}; nothing is sent to it. PATCH {"enabled": true}, then redeliver.`,
        );
      }
      if (!(await em.count(Event, { id: original.eventId }))) {
        throw new DomainError('EVENT_EXPIRED', `Event ${original.eventId} is older than 30 days and no longer kept.`);
      }
      const now = new Date();
      const pending = await em.findOne(
        WebhookDelivery,
        { endpoint: endpoint.id, eventId: original.eventId, status: 'pending' },
        { orderBy: { id: 'asc' } },
      );
      if (pending) {
        if (pending.scheduledAt > now) pending.scheduledAt = now;
        // Only while no worker holds it, decided by the row (a worker claims it only at the number it read).
        const unclaimed = { $or: [{ claimedUntil: null }, { claimedUntil: { $lt: now } }] };
        if (await em.nativeUpdate(WebhookDelivery, { id: pending.id, ...unclaimed }, { attempt: 1 })) pending.attempt = 1;
        await em.flush();
        return toDeliveryView(pending);
      }
      const delivery = new WebhookDelivery(endpoint, original.eventId, original.eventType, 1, now);
      em.persist(delivery);
      await em.flush();
      return toDeliveryView(delivery);
    });
  }

  private async ownEndpoint(actor: Actor, id: number): Promise<WebhookEndpoint> {
    const webhookId = v.id(id, 'webhookId');
    const endpoint = await this.em.findOne(WebhookEndpoint, { id: webhookId, account: actor.accountId });
    if (!endpoint) throw notFound('Webhook', webhookId);
    return endpoint;
  }

  private checkedEvents(value: unknown): string[] {
    if (!Array.isArray(value) || value.length === 0 || value.length > EVENT_TYPES.length) {
      throw validationFailed('events must list 1 or more event types.', [
        { path: 'events', message: 'must list event types such as order.placed or order.*' },
      ]);
    }
    return parseEventTypes(value, 'events')!;
  }

  private checkedUrl(value: unknown): string {
    return checkedWebhookUrl(value, this.policy.allowPrivate);
  }
}
