/**
 * What a request costs (docs/RATE-LIMITS.md, "What a request costs"), one policy for both facades. A REST request costs 1; a GraphQL
 * request costs what the same data costs through REST: 1 per executed root field (aliases count like
 * fields), plus, for each nested connection (such as `Category.pets`), 1 per parent it is resolved
 * for — the REST list request a client would send per parent. `nodes(ids:)` costs 1 per id (at least 1), the REST
 * read a client would send per object. Reading one's own rate limit, public
 * documents and introspection are free.
 */
export const FREE_GRAPHQL_ROOT_FIELDS: ReadonlySet<string> = new Set(['__schema', '__type', '__typename', 'rateLimit']);
const FREE_REST_OPERATIONS: ReadonlySet<string> = new Set(['getRateLimit']);

/**
 * What a GraphQL refusal the preparation did not charge costs, on HTTP and WebSocket alike (docs/RATE-LIMITS.md):
 * `point`, 1 as any refused REST request, so that a flood of refused documents meets the limit; `free-request`, one of
 * the key's free requests, for an unknown persisted-query hash (the protocol's first step: the text comes next);
 * `none` for the refusals a limiter of their own counted (401, 403, 429) and the server's failures. A subscribe over
 * the plan's cap is a `point`, as the same refusal of a webhook endpoint costs through REST.
 */
export type RefusalCharge = 'none' | 'free-request' | 'point';

export function refusalCharge(status: number, code: string | undefined): RefusalCharge {
  if (code === 'PERSISTED_QUERY_NOT_FOUND') return 'free-request';
  // A document refused as not trusted is a refusal of the document, though its status is 403.
  if (code === 'DOCUMENT_NOT_TRUSTED') return 'point';
  const counted = status === 401 || status === 403 || status === 429;
  return counted || status >= 500 ? 'none' : 'point';
}

export function restCost(operation: { operationId: string; public: boolean } | null): number {
  return operation && (operation.public || FREE_REST_OPERATIONS.has(operation.operationId)) ? 0 : 1;
}

/** What the GraphQL facade reads off an operation, its sizes taken with the request's variables and defaults. */
export interface GraphQLOperationShape {
  /** Field names of the executed root fields, one per response key (`a: pets b: pets` is two). */
  rootFields: readonly string[];
  /** For each nested connection in the result, how many parents it is resolved for (at most). */
  nestedConnectionParents: readonly number[];
  /** For each executed `nodes` root field, how many ids it is given. */
  nodesIds?: readonly number[];
}

export function graphqlCost({ rootFields, nestedConnectionParents, nodesIds = [] }: GraphQLOperationShape): number {
  const roots = rootFields.filter((name) => !FREE_GRAPHQL_ROOT_FIELDS.has(name)).length;
  // Each `nodes` field is already 1 of `roots`: it adds its ids beyond the first.
  const perId = nodesIds.reduce((sum, ids) => sum + Math.max(0, ids - 1), 0);
  return nestedConnectionParents.reduce((sum, parents) => sum + parents, roots + perId);
}

/**
 * What one answer pushed by a subscription costs: its document's cost less 1. The root field is the
 * event itself, which the stream hands over for free (starting the subscription cost 1); the nested
 * connections resolved for it are read from the database on every push, as the same query over HTTP
 * would read them, so they are charged as over HTTP.
 */
export function pushCost(documentCost: number): number {
  return Math.max(0, documentCost - 1);
}
