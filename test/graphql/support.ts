import assert from 'node:assert/strict';
import { join } from 'node:path';
import { projectPath } from '../../src/project-path.js';
import type { Client, TestResponse } from '../helpers/app.js';
import { assertNoLeak } from '../rest/support.js';

export interface GraphQLBody<T = any> {
  data?: T | null;
  errors?: Array<{ message: string; path?: Array<string | number>; extensions?: Record<string, any> }>;
  /** `cost: {requested, charged}` on every executed operation. */
  extensions?: Record<string, any>;
}

/** POST /graphql; fails the test unless the body is a GraphQL response. */
export async function gql<T = any>(client: Client, query: string, variables?: Record<string, unknown>, headers?: Record<string, string>) {
  const res = await client.graphql<GraphQLBody<T>>(query, variables, { headers });
  assert.equal(typeof res.body, 'object', `not a JSON GraphQL response (${res.status}): ${res.text.slice(0, 300)}`);
  return res;
}

/** Asserts a successful response (no errors) and returns its data. */
export function dataOf<T = any>(res: TestResponse<GraphQLBody<T>>): T {
  assert.equal(res.status, 200, res.text.slice(0, 500));
  assert.equal(res.body.errors, undefined, `unexpected errors: ${JSON.stringify(res.body.errors)}`);
  assert.ok(res.body.data, 'no data');
  return res.body.data;
}

/**
 * Asserts that the response failed with exactly one error of `code`/`status` in `extensions`, that the
 * error carries the request id, that nothing internal leaks, and that the HTTP status follows the
 * GraphQL-over-HTTP rule: a request error (no `data`) answers with the error's status, a field error
 * (with `data`) answers 200.
 */
export function assertGraphQLError(
  res: TestResponse<GraphQLBody>,
  code: string,
  status: number,
): NonNullable<GraphQLBody['errors']>[number] {
  const errors = res.body.errors;
  assert.ok(errors?.length, `expected ${code}, got no errors (${res.status}): ${res.text.slice(0, 300)}`);
  assert.equal(errors.length, 1, `expected one error: ${JSON.stringify(errors)}`);
  const error = errors[0]!;
  assert.equal(error.extensions?.code, code, `expected ${code}: ${JSON.stringify(error)}`);
  assert.equal(error.extensions?.status, status, `expected status ${status}: ${JSON.stringify(error)}`);
  assert.equal(typeof error.message, 'string');
  assert.equal(error.extensions?.requestId, res.headers.get('x-request-id'), 'extensions.requestId equals X-Request-Id');
  if ('data' in res.body) assert.equal(res.status, 200, `a response with data answers 200, got ${res.status}`);
  else assert.equal(res.status, status, `a request error answers its status, got ${res.status}`);
  assertNoLeak(res);
  return error;
}

/**
 * An answer as two apps (or two executors) must give it alike, for parity tests: status, headers and body
 * with what differs by nature masked (request ids, dates, keys and secrets, the seconds to a window's reset,
 * a ban's end time). `varying`: more headers to mask (e.g. `retry-after`, seconds counted from each app's start).
 */
/**
 * Field errors of one answer in a fixed order: resolvers run concurrently, and GraphQL lists their errors in the
 * order they fail (two database reads may finish either way round).
 */
function errorsInAnyOrder(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  const errors = (parsed as { errors?: unknown } | null)?.errors;
  if (!Array.isArray(errors) || errors.length < 2) return body;
  const sorted = errors.map((e) => JSON.stringify(e)).sort();
  return JSON.stringify({ ...(parsed as object), errors: sorted.map((e) => JSON.parse(e)) });
}

export function comparableAnswer(res: TestResponse, varying: readonly string[] = []) {
  const masked = new Set(['date', 'x-request-id', 'x-ratelimit-reset', ...varying]);
  const headers: Record<string, string> = {};
  for (const [name, value] of res.headers) {
    if (masked.has(name)) headers[name] = '…';
    // `ratelimit: "minute";r=…;t=<seconds to the reset>`: the seconds depend on when each app started.
    else headers[name] = name === 'ratelimit' ? value.replace(/;t=\d+/g, ';t=…') : value;
  }
  const body = res.text
    .replace(/"requestId":"[^"]+"/g, '"requestId":"…"')
    .replace(/psk_[A-Za-z0-9_-]+/g, 'psk_…')
    .replace(/whsec_[A-Za-z0-9+/=_-]+/g, 'whsec_…')
    // Times differ between the apps, their format must not: every date-time keeps its shape, digits masked.
    .replace(/"\d{4}-\d\d-\d\dT[^"]*"/g, (t) => t.replace(/\d/g, '#'))
    // A ban's message says until when (a time a few milliseconds apart in the two apps).
    .replace(/(banned until )[^".]+/g, '$1…');
  return { status: res.status, headers, body: errorsInAnyOrder(body) };
}

/**
 * GraphQL Codegen's client preset with persisted documents, as docs/CLIENTS.md configures it, over `documents`
 * (globs) into `<dir>/gql/`; `typename` adds its `__typename` transform. Returns the manifest's path.
 */
export async function codegenPersistedDocuments(dir: string, documents: string[], { typename = false } = {}): Promise<string> {
  // Loaded here: Codegen is heavy, and most files that use this module never run it.
  const [{ generate }, { addTypenameSelectionDocumentTransform }] = await Promise.all([
    import('@graphql-codegen/cli'),
    import('@graphql-codegen/client-preset'),
  ]);
  await generate(
    {
      schema: projectPath('schema/schema.graphql'),
      documents,
      generates: {
        [join(dir, 'gql/')]: {
          preset: 'client',
          presetConfig: { persistedDocuments: true, fragmentMasking: false },
          ...(typename ? { documentTransforms: [addTypenameSelectionDocumentTransform] } : {}),
        },
      },
      silent: true,
      errorsOnly: true,
    },
    true,
  );
  return join(dir, 'gql', 'persisted-documents.json');
}
