import type { PetStatus, PlanName, Role } from './entities/index.js';

/** Plain read models the domain returns; each facade serialises them its own way. */
export interface PetView {
  id: number;
  name: string;
  categoryId: number;
  status: PetStatus;
}
export interface CategoryView {
  id: number;
  name: string;
  description: string | null;
}
export interface OrderView {
  id: number;
  petId: number | null;
  quantity: number;
  shipDate: Date | null;
  complete: boolean;
  accountId: number;
}
export interface InventoryView {
  petId: number;
  quantity: number;
  status: PetStatus;
}
export interface Limits {
  perMinute: number;
  perDay: number;
  /** Webhook endpoints the account may register. */
  webhookEndpoints: number;
  /** GraphQL subscriptions the account may have open at once. */
  subscriptions: number;
}
export interface AccountView {
  id: number;
  name: string;
  role: Role;
  plan: PlanName;
  limits: Limits;
  createdAt: Date;
}
export interface ApiKeyView {
  id: number;
  accountId: number;
  prefix: string;
  createdAt: Date;
  revokedAt: Date | null;
  bannedUntil: Date | null;
}
export interface NewApiKeyView extends ApiKeyView {
  /** The full secret: returned once, at creation, never stored. */
  key: string;
}
export interface EventView {
  id: number;
  type: string;
  createdAt: Date;
  /** The resource as the REST facade shows it. */
  data: Record<string, unknown>;
  /** The order's account for order events; null for events every account may see. */
  accountId: number | null;
  /** The trace context of the change that wrote it (tracing on), for the spans that deliver it; never shown. */
  traceparent?: string | null;
}
export interface WebhookEndpointView {
  id: number;
  url: string;
  events: string[];
  enabled: boolean;
  /** Why the service disabled it; null while enabled. */
  disabledReason: string | null;
  createdAt: Date;
}
export interface WebhookEndpointWithSecretView extends WebhookEndpointView {
  /** `whsec_…`: returned at creation and rotation only. */
  secret: string;
}
export interface WebhookDeliveryView {
  id: number;
  webhookId: number;
  eventId: number;
  eventType: string;
  attempt: number;
  status: 'pending' | 'succeeded' | 'failed';
  scheduledAt: Date;
  attemptedAt: Date | null;
  responseStatus: number | null;
  durationMs: number | null;
  error: string | null;
}
