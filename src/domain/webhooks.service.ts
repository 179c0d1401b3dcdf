import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { raw } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Account, Event, WebhookDelivery, WebhookEndpoint } from './entities/index.js';
import { DomainError, notFound, validationFailed } from './errors.js';
import type { Actor } from './actor.js';
import { limitsFor } from './plans.js';
import { decodeCursor, pageSize, toPage, type Page, type PageRequest } from './pagination.js';
import { EVENT_TYPES, parseEventTypes } from './events.service.js';
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

/** An address a webhook may reach: public unicast only (no loopback, private, link-local, metadata, multicast…). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
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
 * Webhook endpoints and their delivery log. An endpoint belongs to the account that registered it:
 * another account's endpoint, staff's included, is NOT_FOUND (its secret and traffic are the owner's).
 */
export class WebhooksService {
  constructor(
    private readonly em: EntityManager,
    private readonly policy: WebhookPolicy,
  ) {}

  async listWebhooks(actor: Actor, page: PageRequest): Promise<Page<WebhookEndpointView>> {
    const limit = pageSize(page.limit);
    const rows = await this.em.find(
      WebhookEndpoint,
      { account: actor.accountId, id: { $gt: decodeCursor(page.cursor) } },
      { orderBy: { id: 'asc' }, limit: limit + 1 },
    );
    return toPage(rows.map(toEndpointView), limit);
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
      const [row] = await em.execute<Array<{ id: number | string | null }>>('select max(id) as id from events');
      const endpoint = new WebhookEndpoint(em.getReference(Account, actor.accountId), url, JSON.stringify(events), newWebhookSecret(), Number(row?.id ?? 0));
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
    const limit = pageSize(page.limit);
    const rows = await this.em.find(
      WebhookDelivery,
      { endpoint: endpoint.id, id: { $gt: decodeCursor(page.cursor) } },
      { orderBy: { id: 'asc' }, limit: limit + 1 },
    );
    return toPage(rows.map(toDeliveryView), limit);
  }

  /** Sends a delivery's event again, now, as a new first attempt (the endpoint may have been disabled). */
  async redeliver(actor: Actor, webhookId: number, deliveryId: number): Promise<WebhookDeliveryView> {
    const endpoint = await this.ownEndpoint(actor, webhookId);
    const id = v.id(deliveryId, 'deliveryId');
    const original = await this.em.findOne(WebhookDelivery, { id, endpoint: endpoint.id });
    if (!original) throw notFound('Delivery', id);
    if (!(await this.em.count(Event, { id: original.eventId }))) {
      throw new DomainError('EVENT_EXPIRED', `Event ${original.eventId} is older than 30 days and no longer kept.`);
    }
    const delivery = new WebhookDelivery(endpoint, original.eventId, original.eventType, 1, new Date());
    this.em.persist(delivery);
    await this.em.flush();
    return toDeliveryView(delivery);
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
      if (isIP(host) ? !isPublicAddress(host) : host === 'localhost' || host.endsWith('.localhost') || !host.includes('.')) {
        throw refuse('must point to a public address');
      }
    }
    return url.toString();
  }
}
