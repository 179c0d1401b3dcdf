import { validationFailed } from '../domain/errors.js';
import { MAX_ID } from '../domain/validate.js';

/**
 * GraphQL ids (docs/API.md, "Ids"): every `id` is global, the base64url (unpadded) of `<Type>:<database id>`,
 * and clients treat it as opaque. This module is the only place that encodes or decodes one.
 */

/** The types that implement `Node`: `node(id:)` reads each. */
export const NODE_TYPES = [
  'Pet',
  'Category',
  'Order',
  'InventoryItem',
  'Account',
  'ApiKey',
  'Event',
  'WebhookEndpoint',
  'WebhookDelivery',
] as const;
export type NodeType = (typeof NODE_TYPES)[number];

/**
 * Types that show a node with more (the request's key, a secret shown once). They are not nodes, so their ids are
 * their own (a normalised cache keeps one record per id, of one type); as arguments they stand for the node.
 */
const SHOWS: ReadonlyMap<string, NodeType> = new Map([
  ['Viewer', 'Account'],
  ['AccountWithKey', 'Account'],
  ['NewApiKey', 'ApiKey'],
  ['WebhookEndpointWithSecret', 'WebhookEndpoint'],
]);
export type IdType = NodeType | 'Viewer' | 'AccountWithKey' | 'NewApiKey' | 'WebhookEndpointWithSecret';

const isNodeType = (name: string): name is NodeType => (NODE_TYPES as readonly string[]).includes(name);
const SHAPE = /^([A-Za-z]+):([1-9]\d{0,15})$/;

/** Ids encoded lately, by type: an answer repeats the ids of the rows it reads often, and encoding allocates a Buffer. */
const ENCODED = new Map<IdType, Map<number, string>>();
const ENCODED_PER_TYPE = 10_000;

export function globalId(type: IdType, databaseId: number): string {
  let known = ENCODED.get(type);
  if (!known) ENCODED.set(type, (known = new Map()));
  let id = known.get(databaseId);
  if (id === undefined) {
    id = Buffer.from(`${type}:${databaseId}`).toString('base64url');
    if (known.size >= ENCODED_PER_TYPE) known.clear();
    known.set(databaseId, id);
  }
  return id;
}

/** The node a global id names; VALIDATION_FAILED at `path` for anything this API did not hand out. */
export function decodeGlobalId(value: unknown, path: string): { type: NodeType; databaseId: number } {
  const match = typeof value === 'string' ? SHAPE.exec(Buffer.from(value, 'base64url').toString('latin1')) : null;
  const shown = match?.[1];
  const type = shown === undefined ? undefined : isNodeType(shown) ? shown : SHOWS.get(shown);
  const databaseId = Number(match?.[2]);
  // Decoding is lenient (padding, stray characters): only the exact text this module encodes is an id.
  if (!type || databaseId > MAX_ID || globalId(shown as IdType, databaseId) !== value) {
    throw validationFailed(`${path} is not an id of this API (ids are opaque: pass an \`id\` the API returned).`, [
      { path, message: 'must be a global id' },
    ]);
  }
  return { type, databaseId };
}

const article = (type: string) => `${/^[AEIOU]/.test(type) ? 'an' : 'a'} ${type}`;

/** The database id of a `type` node's global id; another type's id is VALIDATION_FAILED at `path`. */
export function databaseIdOf(type: NodeType, value: unknown, path: string): number {
  const decoded = decodeGlobalId(value, path);
  if (decoded.type !== type) {
    throw validationFailed(`${path} must be the id of ${article(type)}; this one is ${article(decoded.type)}'s.`, [
      { path, message: `must be ${article(type)} id` },
    ]);
  }
  return decoded.databaseId;
}

/** `databaseIdOf` for an optional argument: undefined when absent or null. */
export const optionalDatabaseIdOf = (type: NodeType, value: unknown, path: string): number | undefined =>
  value === undefined || value === null ? undefined : databaseIdOf(type, value, path);

/** An `Event.id` (a subscription's `after:`) as the event's feed id. */
export const decodeEventId = (value: unknown, path = 'after'): number => databaseIdOf('Event', value, path);
