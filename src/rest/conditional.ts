import { createHash } from 'node:crypto';
import type { Actor } from '../domain/index.js';

/**
 * Conditional GETs (RFC 9110 §13): every REST GET answer has a strong `ETag`, and a request whose
 * `If-None-Match` matches is answered 304 without a body, costing no rate-limit point.
 *
 * The GETs of the store's data (pets, categories, orders, inventory, the event feed) are tagged
 * from the store's version (the newest event's id: every change to that data writes its event in
 * the same transaction, in commit order), so a 304 is decided without reading a single row, and every
 * instance computes the same tag for the same state. The others (the caller's account and keys,
 * webhooks, the rate limit, the document) are tagged from the answer's bytes.
 */
export const VERSIONED_OPERATIONS: ReadonlySet<string> = new Set([
  'listPets',
  'getPet',
  'listCategories',
  'getCategory',
  'listOrders',
  'getOrder',
  'listInventory',
  'getInventoryItem',
  'listEvents',
]);

/**
 * Versioned GETs whose handler reads the store's version in the same statement as its data (one
 * snapshot, one statement fewer) and returns it as `storeVersion`; the others read it first, alone.
 * A conditional request still reads the version alone first: a match needs no data.
 */
export const VERSION_READ_WITH_DATA: ReadonlySet<string> = new Set(['listPets']);

/** Changes with the answers' shapes (a deploy that changes a representation must not answer 304 to an old tag). */
const REPRESENTATION = '1';

const tagOf = (text: string) => `"${createHash('sha256').update(text).digest('base64url').slice(0, 27)}"`;

/**
 * Version tags already computed, by their text: a tag is a pure function of it (the version is still
 * read per request), and a hot read asks for the same one again and again. Bounded: emptied when full.
 */
const versionTags = new Map<string, string>();
const MAX_VERSION_TAGS = 1000;

/**
 * The tag of a versioned answer: the store's version, what was asked (path and query, as sent), and
 * who asked (orders and events are seen per account).
 */
export function versionTag(version: number, requestTarget: string, actor: Actor | undefined): string {
  const text = `${REPRESENTATION}\n${version}\n${requestTarget}\n${actor ? `${actor.accountId}:${actor.role}` : '-'}`;
  let tag = versionTags.get(text);
  if (tag === undefined) {
    if (versionTags.size >= MAX_VERSION_TAGS) versionTags.clear();
    tag = tagOf(text);
    versionTags.set(text, tag);
  }
  return tag;
}

/** The tag of an answer from its bytes. */
export const bodyTag = (body: string): string => tagOf(`${REPRESENTATION}\n${body}`);

/** Whether `If-None-Match` names `etag` (weak comparison, as RFC 9110 asks for this header; `*` matches any). */
export function matches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}
