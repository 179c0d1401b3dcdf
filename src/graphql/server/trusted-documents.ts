/**
 * Trusted documents: the operations the company's own apps send, known when the apps are built. GraphQL Codegen's
 * client preset (`persistedDocuments`) and relay-compiler (`persistConfig`) write them as a manifest, one JSON object
 * of `"<sha256>": "<document text>"`. The manifest is read once at start (`GRAPHQL_TRUSTED_DOCUMENTS`): every entry's
 * key must be its text's SHA-256 and every document must parse and validate as any request's would, or the service
 * does not start. A request then names one by `documentId` (`sha256:<hex>`, GraphQL over HTTP's persisted documents)
 * or by Apollo's persisted-query hash, without its text; with `GRAPHQL_TRUSTED_ONLY`, no other document runs but from
 * a staff key (the explorers).
 *
 * A trusted document goes through the same pipeline as its text would: the request is rewritten with the text before
 * Apollo (or the WebSocket preparation) sees it, so it is parsed, cached, charged and limited exactly as the text is.
 * Checked at start, it is parsed again on its first use by an instance (Apollo's document store keeps it like any).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse, type DocumentNode } from 'graphql';
import { isStaff, type Actor } from '../../domain/actor.js';
import { validationFailed } from '../../domain/errors.js';
import { HttpError } from '../../http/errors.js';

const HEX = /^[0-9a-f]{64}$/;
/** GraphQL over HTTP's SHA-256 document identifier. */
const DOCUMENT_ID = /^sha256:([0-9a-f]{64})$/;

export interface TrustedDocument {
  /** `sha256:<hex>`: what a request's `documentId` names it by. */
  id: string;
  /** The text's SHA-256, hex: Apollo's persisted-query hash. */
  hash: string;
  text: string;
}

/** A manifest the service cannot use: the start is refused with this message. */
export class TrustedDocumentsError extends Error {}

/** What a document's text comes to: its parsed, validated document, or why not (a request's error messages). */
export type DocumentCheck = (text: string) => DocumentNode | { errors: string[] };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Reads and checks the manifest: a JSON object of `"sha256:<hex>"` (Codegen) or `"<hex>"` (relay-compiler with
 * `algorithm: "SHA256"`) keys, each the SHA-256 of its document text.
 */
export function readManifest(file: string, check: DocumentCheck): Map<string, TrustedDocument> {
  const fail = (why: string): never => {
    throw new TrustedDocumentsError(`GRAPHQL_TRUSTED_DOCUMENTS=${JSON.stringify(file)}: ${why}`);
  };
  let raw: string;
  try {
    raw = readFileSync(file, 'utf8');
  } catch (error) {
    return fail(`cannot read the file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}).`);
  }
  let manifest: unknown;
  try {
    manifest = JSON.parse(raw);
  } catch (error) {
    return fail(`is not JSON (${(error as Error).message}).`);
  }
  if (!manifest || typeof manifest !== 'object' || Array.isArray(manifest)) {
    return fail('must be a JSON object of "sha256:<hex>": "<document text>" entries (persisted-documents.json).');
  }
  const documents = new Map<string, TrustedDocument>();
  for (const [key, text] of Object.entries(manifest)) {
    const entry = `entry ${JSON.stringify(key)}`;
    const hash = key.startsWith('sha256:') ? key.slice('sha256:'.length) : key;
    if (!HEX.test(hash)) {
      fail(`${entry}: the key is not a SHA-256 (sha256:<64 lowercase hex> or <64 lowercase hex>); hash documents with SHA-256.`);
    }
    if (typeof text !== 'string' || !text) fail(`${entry}: the value must be the document's text.`);
    const actual = sha256(text);
    if (actual !== hash) fail(`${entry}: the SHA-256 of its document is ${actual}; the key must be the hash of the text.`);
    const checked = check(text);
    if ('errors' in checked) fail(`${entry}: the document is not valid against the schema: ${checked.errors.join(' ')}`);
    documents.set(hash, { id: `sha256:${hash}`, hash, text });
  }
  return documents;
}

/**
 * The manifest's file, form and hashes, and its documents' syntax, checked before the database is touched (a first
 * start migrates and makes the staff account): the start fails on them before anything is written. Each document is
 * checked against the schema once the schema is built (`readManifest` in the request preparation).
 */
export function checkManifestForm(file: string): void {
  readManifest(file, (text) => {
    try {
      return parse(text);
    } catch (error) {
      return { errors: [(error as Error).message] };
    }
  });
}

export interface TrustedDocuments {
  /** Whether only trusted documents run (but from staff keys). */
  readonly only: boolean;
  readonly size: number;
  byHash(hash: string): TrustedDocument | undefined;
  /** The document a `documentId` names; a malformed id is VALIDATION_FAILED, an unknown one PERSISTED_DOCUMENT_NOT_FOUND. */
  named(documentId: unknown): TrustedDocument;
  /** Refuses a document sent as text that the caller may not send (DOCUMENT_NOT_TRUSTED). */
  checkText(text: string, actor: Actor | undefined): void;
  /**
   * The trusted document an APQ hash sent without its text names; with `only`, a hash that names none is refused
   * (DOCUMENT_NOT_TRUSTED, as its text would be) but from a staff key, whose registrations are Apollo's as usual.
   */
  checkHash(hash: string, actor: Actor | undefined): TrustedDocument | undefined;
}

export function trustedDocuments(documents: ReadonlyMap<string, TrustedDocument>, only: boolean): TrustedDocuments {
  const byHash = (hash: string) => documents.get(hash);
  return {
    only,
    size: documents.size,
    byHash,
    named(documentId) {
      const hash = typeof documentId === 'string' ? DOCUMENT_ID.exec(documentId)?.[1] : undefined;
      if (!hash) {
        throw validationFailed('`documentId` must be a SHA-256 document identifier: "sha256:" and 64 lowercase hex digits.', [
          { path: 'documentId', message: 'must match ^sha256:[0-9a-f]{64}$' },
        ]);
      }
      const found = documents.get(hash);
      if (!found) {
        throw new HttpError(
          'PERSISTED_DOCUMENT_NOT_FOUND',
          `No trusted document has the id ${documentId}; this server knows only the documents of its manifest.`,
        );
      }
      return found;
    },
    checkText(text, actor) {
      if (!only || (actor && isStaff(actor)) || documents.has(sha256(text))) return;
      throw notTrusted('not a document text');
    },
    checkHash(hash, actor) {
      const found = documents.get(hash);
      if (found || !only || (actor && isStaff(actor))) return found;
      throw notTrusted('and this hash is not one of them');
    },
  };
}

const notTrusted = (what: string) =>
  new HttpError(
    'DOCUMENT_NOT_TRUSTED',
    `This server runs only its trusted documents: send a documentId (or persisted-query hash) of the manifest, ${what}.`,
  );

/** An HTTP request's GraphQL fields as Apollo reads them: the POST body, or GET's query string. */
export interface HttpGraphQLRequest {
  method: string;
  body: unknown;
  search: string;
}

/**
 * A request that names a trusted document by `documentId`, or by its APQ hash without the text, becomes the request
 * with its text (in the body, or GET's `query`), which Apollo then serves as it serves any; a text the caller may not
 * send is refused here, before it is parsed. `documentId` beside a non-empty `query` is refused (one or the other), and
 * so is a persisted query whose hash is not a SHA-256 (Apollo would make any value a store key, a nested array too).
 */
export function resolveHttpRequest(trusted: TrustedDocuments, request: HttpGraphQLRequest, actor: Actor | undefined): HttpGraphQLRequest {
  if (request.method === 'GET') {
    const params = new URLSearchParams(request.search);
    const extensions = parseJson(params.get('extensions'));
    const persisted = persistedQueryOf(extensions);
    const documentId = params.get('documentId');
    const query = params.get('query');
    if (documentId !== null) {
      if (query) throw bothGiven();
      params.delete('documentId');
      params.set('query', trusted.named(documentId).text);
      return { ...request, search: params.toString() };
    }
    if (query) {
      trusted.checkText(query, actor);
      return request;
    }
    const found = persisted && byPersistedQuery(trusted, extensions, persisted, actor);
    if (!found) return request;
    params.set('query', found.text);
    params.set('extensions', JSON.stringify(found.extensions));
    return { ...request, search: params.toString() };
  }
  const body = request.body;
  if (!isRecord(body)) return request;
  const persisted = persistedQueryOf(body.extensions);
  if (namesDocument(body)) return { ...request, body: withDocumentText(trusted, body) };
  if (typeof body.query === 'string' && body.query) {
    trusted.checkText(body.query, actor);
    return request;
  }
  const found = persisted && byPersistedQuery(trusted, body.extensions, persisted, actor);
  return found ? { ...request, body: { ...body, query: found.text, extensions: found.extensions } } : request;
}

/**
 * The trusted text an APQ hash sent alone names, and the extensions without `persistedQuery` (the text is the
 * manifest's: nothing to verify or register); undefined when the hash is not a trusted document's. Under `only`, a
 * hash that names no trusted document is refused here.
 */
function byPersistedQuery(trusted: TrustedDocuments, extensions: unknown, persisted: PersistedQuery, actor: Actor | undefined) {
  const found = trusted.checkHash(persisted.sha256Hash, actor);
  // Another version is Apollo's to refuse, as for any hash.
  if (!found || persisted.version !== 1) return undefined;
  const { persistedQuery: _, ...others } = extensions as Record<string, unknown>;
  return { text: found.text, extensions: others };
}

/** Apollo's persisted-query extension, its hash checked. */
interface PersistedQuery {
  sha256Hash: string;
  version?: unknown;
}

/**
 * A request's `extensions.persistedQuery` (undefined when there is none: Apollo reads false, null and missing alike);
 * one whose `sha256Hash` is not a SHA-256 (64 lowercase hex digits, as clients send it) is refused.
 */
function persistedQueryOf(extensions: unknown): PersistedQuery | undefined {
  if (!isRecord(extensions) || !extensions.persistedQuery) return undefined;
  const { persistedQuery } = extensions;
  if (isRecord(persistedQuery) && typeof persistedQuery.sha256Hash === 'string' && HEX.test(persistedQuery.sha256Hash)) {
    return { sha256Hash: persistedQuery.sha256Hash, version: persistedQuery.version };
  }
  throw validationFailed('`extensions.persistedQuery.sha256Hash` must be the SHA-256 of the query: 64 lowercase hex digits.', [
    { path: 'extensions.persistedQuery.sha256Hash', message: 'must match ^[0-9a-f]{64}$' },
  ]);
}

/** A JSON object (not null, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

const parseJson = (text: string | null): unknown => {
  if (text === null) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** Whether a request's fields name a document by `documentId`. */
export const namesDocument = (fields: Record<string, unknown>): boolean => fields.documentId !== undefined && fields.documentId !== null;

/** A request's fields that name a trusted document by `documentId`, with the document's text as `query` instead. */
export function withDocumentText(trusted: TrustedDocuments, { documentId, ...rest }: Record<string, unknown>): Record<string, unknown> {
  if (rest.query !== undefined && rest.query !== null && rest.query !== '') throw bothGiven();
  return { ...rest, query: trusted.named(documentId).text };
}

const bothGiven = () =>
  validationFailed('Send either `documentId` or `query`, not both.', [{ path: 'documentId', message: 'must not be given with query' }]);
