import { hash } from 'node:crypto';

/**
 * Conditional GETs (RFC 9110 §13, docs/RATE-LIMITS.md): every REST GET answer has a strong `ETag`, and a request
 * whose `If-None-Match` names it is answered 304 without a body, costing no rate-limit point.
 *
 * The tag is made from exactly what the caller is sent (the body, and the next page's link), so it
 * changes only when what the caller may see changes: it reveals nothing of other accounts, and every
 * instance computes the same tag for the same answer. A 304 is decided from the answer itself, so it
 * needs a resource the caller may see: a missing or forbidden one answers its 404 or 403 as always.
 */

/** Leads every tag, and changes with the answers' shapes (a deploy that changes a representation must not answer 304 to an old tag). */
const REPRESENTATION = '2';
const TAG_START = `"${REPRESENTATION}`;
/** Leads a tag whose digest covers a next-page link too: the two forms of tag never meet, whatever the body. */
const LINKED_TAG_START = `"${REPRESENTATION}L`;

/**
 * The strong tag of an answer: the representation's version, then a SHA-1 (160 bits, base64url) of its bytes (an
 * answer with a next page: `L`, then the SHA-1 of its link, a newline and its bytes), quoted. A tag only has to change
 * when the answer does (nobody gains by forging a collision with their own answer), and SHA-1 hashes a read's body in
 * fewer instructions than SHA-256. The body is hashed as it is, not copied behind a prefix first.
 */
export function answerTag(body: string, link: string | undefined): string {
  if (link === undefined) return `${TAG_START}${hash('sha1', body, 'base64url')}"`;
  return `${LINKED_TAG_START}${hash('sha1', `${link}\n${body}`, 'base64url')}"`;
}

/** Whether `If-None-Match` names `etag` (weak comparison, as RFC 9110 asks for this header; `*` matches any). */
export function matches(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((candidate) => candidate.trim().replace(/^W\//, '') === etag);
}
