import { Readable } from 'node:stream';
import { HeaderMap, type ApolloServer, type BaseContext, type HTTPGraphQLRequest, type HTTPGraphQLResponse } from '@apollo/server';
import type { Context } from 'koa';

/** The media types of GraphQL over HTTP's JSON answers, Apollo's default first (its answer when any type is accepted). */
export const GRAPHQL_MEDIA_TYPES = ['application/json', 'application/graphql-response+json'] as const;

/**
 * Apollo Server's Koa integration, on Apollo's documented integration API (`executeHTTPGraphQLRequest`): the
 * request's method and headers (copied once, as Node parsed them), and its query string and body (read by the
 * edge, a trusted document's text put in) go in; Apollo's status, headers and body come out and are written once onto Node's response. Apollo does
 * everything in between: CSRF prevention, GET parameters, POST body checks, persisted queries, content
 * negotiation, the landing page, the request pipeline and its plugins.
 */
export function executeWithApollo<TContext extends BaseContext>(
  server: ApolloServer<TContext>,
  ctx: Context,
  request: { body: unknown; search: string },
  context: () => Promise<TContext>,
): Promise<HTTPGraphQLResponse> {
  const headers = new HeaderMap();
  const raw = ctx.req.headers;
  for (const name in raw) {
    const value = raw[name];
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const method = ctx.req.method!.toUpperCase();
  // Apollo reads Accept only once the operation has run: a mutation would be done, then answered 406. An Accept
  // that takes no JSON (nor, on a GET, the landing page's HTML) is disregarded instead, as GraphQL over HTTP
  // allows: the answer is JSON.
  if (headers.has('accept') && !ctx.request.accepts(...GRAPHQL_MEDIA_TYPES, ...(method === 'GET' ? ['text/html'] : []))) {
    headers.set('accept', 'application/json');
  }
  const httpGraphQLRequest: HTTPGraphQLRequest = { method, headers, search: request.search, body: request.body };
  return server.executeHTTPGraphQLRequest({ httpGraphQLRequest, context });
}

/** Apollo's answer onto Koa's response: status, headers, then the body (one string, or chunks for incremental delivery). */
export function writeApolloResponse(ctx: Context, response: HTTPGraphQLResponse): void {
  const res = ctx.res;
  for (const [name, value] of response.headers) res.setHeader(name, value);
  ctx.response.status = response.status ?? 200;
  ctx.response.body = response.body.kind === 'complete' ? response.body.string : Readable.from(response.body.asyncIterator);
}
