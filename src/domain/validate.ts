import { validationFailed } from './errors.js';

/**
 * Bounds that both facades share. REST's OpenAPI document states them too; the domain checks them, on the
 * normal form of text, so that both facades (GraphQL's types know no lengths) get the same rule and message.
 */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

export const MAX_ID = Number.MAX_SAFE_INTEGER;
/** The most ids one read takes (REST `?ids=`, GraphQL `ids:` filters and `nodes(ids:)`). */
export const MAX_IDS = 100;

/** A list of `count` ids at `path`: at least `min`, at most MAX_IDS, or VALIDATION_FAILED saying the bounds. */
export function idCount(count: number, path: string, min = 0): void {
  if (count >= min && count <= MAX_IDS) return;
  const bounds = min > 0 ? `${min} to ${MAX_IDS} ids` : `at most ${MAX_IDS} ids`;
  throw validationFailed(`${path} takes ${bounds}.`, [{ path, message: bounds }]);
}

/** An id as a client gives it: a number, or its decimal digits (REST paths, GraphQL `ID`). */
export type Id = number | string;

/** Decimal digits of an id (at most 16: every such id is a safe integer or refused by range). */
export const DECIMAL_ID = /^\d{1,16}$/;

/** The number an id's text stands for, or NaN when it is not plain decimal digits (refused by `id`). */
export const parseId = (text: string): number => (DECIMAL_ID.test(text) ? Number(text) : Number.NaN);

/**
 * Unicode format characters (\p{Cf}: zero-width space and joiners, soft hyphen, bidi marks, BOM …) and
 * the other default-ignorable code points (combining grapheme joiner U+034F, variation selectors, Hangul
 * fillers U+115F/U+3164/U+FFA0, Mongolian selectors …) are invisible, so "Dogs\u200b" or "Dogs\u3164"
 * would look exactly like "Dogs" and slip past the uniqueness rule. They are dropped, except a zero-width
 * joiner inside an emoji sequence (👩‍💻) and the emoji presentation selector after a pictograph (❤️),
 * where they are part of the character.
 */
const FORMAT_CHARACTER =
  /(?<=\p{Extended_Pictographic}\uFE0F?)\u200D(?=\p{Extended_Pictographic})|(?<=\p{Extended_Pictographic})\uFE0F|(\p{Cf}|\p{Default_Ignorable_Code_Point})/gu;

/** The form every stored and compared text takes: NFC, no invisible format characters, trimmed. */
export function normalizeText(value: string): string {
  return value
    .normalize('NFC')
    .replace(FORMAT_CHARACTER, (joiner, format: string | undefined) => (format === undefined ? joiner : ''))
    .trim();
}

export function trimmedText(value: unknown, path: string, max: number, { min = 1 } = {}): string {
  if (typeof value !== 'string') throw validationFailed(`${path} must be a string.`, [{ path, message: 'must be a string' }]);
  // Neither PostgreSQL text nor the SQLite driver stores NUL: refuse it here rather than fail in the database.
  if (value.includes('\u0000'))
    throw validationFailed(`${path} must not contain NUL characters.`, [{ path, message: 'must not contain NUL characters' }]);
  // A lone UTF-16 surrogate (possible through a JSON \ud800 escape) is not text any database can store faithfully.
  if (LONE_SURROGATE.test(value))
    throw validationFailed(`${path} must be valid Unicode text.`, [{ path, message: 'contains a lone surrogate' }]);
  const text = normalizeText(value);
  // Lengths count characters (code points), as JSON Schema's maxLength in the OpenAPI document and
  // PostgreSQL's varchar do, not UTF-16 units: 100 emoji are a valid 100-character name.
  const length = [...text].length;
  if (length < min || length > max) {
    const message = min > 0 ? `must be ${min} to ${max} characters after trimming` : `must be at most ${max} characters`;
    throw validationFailed(`${path} ${message}.`, [{ path, message }]);
  }
  return text;
}

/** Control characters (C0, DEL, C1: BEL, line breaks, tabs, escapes …) and Unicode's own line and paragraph separators: no name holds one. */
const CONTROL_CHARACTER = /[\p{Cc}\p{Zl}\p{Zp}]/u;
/**
 * A character that shows something: not white space or another separator, not a control, format, private-use or
 * unassigned code point, not a combining mark on its own, and not U+2800 (the Braille blank, which draws nothing).
 */
const VISIBLE_CHARACTER = /[^\p{White_Space}\p{Z}\p{C}\p{M}\u2800]/u;

/**
 * A name (a pet's, a category's, an account's, or the text a name filter looks for): `trimmedText` of 1 to 100
 * characters, with no control character and at least one visible character, so that no two names that look
 * alike (or look like nothing) are told apart by what cannot be seen.
 */
export function nameText(value: unknown, path: string): string {
  const text = trimmedText(value, path, 100);
  if (CONTROL_CHARACTER.test(text)) {
    throw validationFailed(`${path} must not contain control characters (line breaks, tabs, BEL …).`, [
      { path, message: 'must not contain control characters' },
    ]);
  }
  if (!VISIBLE_CHARACTER.test(text)) {
    throw validationFailed(`${path} must contain at least one visible character.`, [{ path, message: 'must contain a visible character' }]);
  }
  return text;
}

/**
 * The key under which names are unique ignoring case: the name's normal form, case-folded (ICU's full lower and
 * upper case mappings, so `Straße` and `STRASSE` share `strasse`, and `ǅ`, `ǆ`, `Ǆ` one key), a dotted capital I
 * (`İ`) folded to a plain `i` (so `İstanbul` is `istanbul`), in NFC. Computed here, not by the database, so SQLite
 * and PostgreSQL compare names alike. At most three characters per character of the name (`ﬃ` is `ffi`).
 */
export function nameKey(name: string): string {
  return name
    .normalize('NFC')
    .toLowerCase()
    .toUpperCase()
    .toLowerCase()
    .replace(/i\u0307/g, 'i')
    .normalize('NFC');
}

/**
 * A category whose name equals an earlier one's once case-folded (`Straße` beside `STRASSE`, both written when
 * names were only lower-cased) keeps its row under this prefix and its id as key (src/db/migrations/
 * category-name-keys.ts): no name has a control character, so no name's key starts with one.
 */
export const COLLIDING_KEY_PREFIX = '\u0001';

export function intInRange(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    const message = `must be an integer from ${min} to ${max}`;
    throw validationFailed(`${path} ${message}.`, [{ path, message }]);
  }
  return value;
}

export function id(value: unknown, path: string): number {
  const n = typeof value === 'string' ? parseId(value) : value;
  return intInRange(n, path, 1, MAX_ID);
}

/** An optional id (a filter, a subscription's argument): undefined when absent, otherwise checked as `id`. */
export function optionalId(value: unknown, path: string): number | undefined {
  return value === undefined || value === null ? undefined : id(value, path);
}

export function oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    const message = `must be one of ${allowed.join(', ')}`;
    throw validationFailed(`${path} ${message}.`, [{ path, message }]);
  }
  return value as T;
}

/** The instants a date-time may name: years 0001 to 9999 in UTC, what RFC 3339 writes and both databases store. */
const EARLIEST = Date.parse('0001-01-01T00:00:00Z');
const LATEST = Date.parse('9999-12-31T23:59:59.999Z');

export function dateTime(value: unknown, path: string): Date {
  const d = value instanceof Date ? value : typeof value === 'string' ? new Date(value) : new Date(NaN);
  if (Number.isNaN(d.getTime()) || (typeof value === 'string' && !/^\d{4}-\d{2}-\d{2}[Tt]/.test(value))) {
    throw validationFailed(`${path} must be an ISO 8601 date-time.`, [{ path, message: 'must be a date-time' }]);
  }
  if (d.getTime() < EARLIEST || d.getTime() > LATEST) {
    const message = 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z';
    throw validationFailed(`${path} ${message}.`, [{ path, message }]);
  }
  return d;
}
