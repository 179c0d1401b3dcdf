/**
 * F_apollo, the floor of this stack for a keyed GraphQL read, built as F (bench/ladder-server.ts) is for REST: Koa +
 * Apollo Server 5 through `@as-integrations/koa`, graphql-jit as the executor through Apollo's `gateway` option, cache
 * control off; a plain graphql-js schema of the two reads the bench sends (`pets(filter: {ids})` and `pet(id)`, the
 * documents of bench/scenarios.ts); the API key looked up in a Map, a rate-limiter-flexible limiter (memory) and the 5
 * rate-limit headers; each read one cached libsql prepared statement on the bench's SQLite file.
 *
 *   DATABASE=… KEY=… node dist/bench/apollo-floor.js      (by bench/run.ts and bench/instructions.ts)
 *
 * Prints `listening PORT`.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import getRawBody from 'raw-body';
import { ApolloServer, type ApolloServerOptions, type BaseContext } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled } from '@apollo/server/plugin/disabled';
import { koaMiddleware } from '@as-integrations/koa';
import {
  GraphQLEnumType,
  GraphQLID,
  GraphQLInputObjectType,
  GraphQLInt,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLSchema,
  GraphQLString,
  printSchema,
  type DocumentNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import { floorGuard } from './floor-guard.js';
import { databaseIdOf, globalId } from '../src/graphql/global-id.js';
import Database from 'libsql';

type Gateway = NonNullable<ApolloServerOptions<BaseContext>['gateway']>;
type Executor = NonNullable<Awaited<ReturnType<Gateway['load']>>['executor']>;
interface Row {
  id: number;
  name: string;
  categoryId: number;
  status: string;
}

const db = new Database(process.env.DATABASE ?? '', { readonly: true });
const COLUMNS = 'select id, name, category_id as categoryId, status from pets';
const byIds = new Map<number, ReturnType<typeof db.prepare>>();
const byId = db.prepare(`${COLUMNS} where id = ?`);
const page = db.prepare(`${COLUMNS} order by id limit ?`);

const Pet = new GraphQLObjectType({
  name: 'Pet',
  fields: {
    // Global ids, as the service's: encoded from the row's ids.
    id: { type: new GraphQLNonNull(GraphQLID), resolve: (row: Row) => globalId('Pet', row.id) },
    name: { type: new GraphQLNonNull(GraphQLString) },
    categoryId: { type: new GraphQLNonNull(GraphQLID), resolve: (row: Row) => globalId('Category', row.categoryId) },
    status: { type: new GraphQLNonNull(new GraphQLEnumType({ name: 'PetStatus', values: { available: {}, pending: {}, sold: {} } })) },
  },
});
const PetEdge = new GraphQLObjectType({ name: 'PetEdge', fields: { node: { type: new GraphQLNonNull(Pet) } } });
const PetConnection = new GraphQLObjectType({
  name: 'PetConnection',
  fields: { edges: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(PetEdge))) } },
});
const PetFilter = new GraphQLInputObjectType({
  name: 'PetFilter',
  fields: { ids: { type: new GraphQLList(new GraphQLNonNull(GraphQLID)) } },
});

const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      pets: {
        type: new GraphQLNonNull(PetConnection),
        args: { filter: { type: PetFilter }, first: { type: GraphQLInt, defaultValue: 20 }, after: { type: GraphQLString } },
        resolve: (_, { filter, first }: { filter?: { ids?: string[] }; first: number }) => {
          const ids = filter?.ids?.map((id, i) => databaseIdOf('Pet', id, `ids[${i}]`));
          let rows: Row[];
          if (ids) {
            let statement = byIds.get(ids.length);
            if (!statement) {
              statement = db.prepare(`${COLUMNS} where id in (${ids.map(() => '?').join(',')}) order by id limit ?`);
              byIds.set(ids.length, statement);
            }
            rows = (statement.all as (...args: number[]) => Row[])(...ids, first);
          } else rows = (page.all as (limit: number) => Row[])(first);
          return { edges: rows.map((node) => ({ node })) };
        },
      },
      pet: {
        type: Pet,
        args: { id: { type: new GraphQLNonNull(GraphQLID) } },
        resolve: (_, { id }: { id: string }) => (byId.get as (id: number) => Row | undefined)(databaseIdOf('Pet', id, 'id')) ?? null,
      },
    },
  }),
});

/** graphql-jit's compiled query, once per document (Apollo's document store hands the same parsed document back). */
const compiled = new WeakMap<DocumentNode, CompiledQuery>();
const executor: Executor = async (request) => {
  let query = compiled.get(request.document);
  if (!query) {
    const made = compileQuery(schema, request.document, request.operationName ?? undefined);
    if (!isCompiledQuery(made)) return made;
    query = made;
    compiled.set(request.document, query);
  }
  return query.query(undefined, request.context, request.request.variables ?? {});
};
let announce: Parameters<Gateway['onSchemaLoadOrUpdate']>[0] = () => {};
const gateway: Gateway = {
  onSchemaLoadOrUpdate: (callback) => {
    announce = callback;
    return () => {};
  },
  load: async () => {
    announce({ apiSchema: schema, coreSupergraphSdl: printSchema(schema) });
    return { executor };
  },
  stop: async () => {},
};
const apollo = new ApolloServer({ gateway, plugins: [ApolloServerPluginCacheControlDisabled()] });
await apollo.start();

const koa = new Koa();
koa.use(floorGuard({ errors: [{ message: 'unknown key', extensions: { code: 'INVALID_API_KEY' } }] }));
// The body parser the integration expects before it (`ctx.request.body`): JSON, as Apollo's own Koa example has.
koa.use(async (ctx, next) => {
  if (ctx.method === 'POST')
    Object.assign(ctx.request, { body: JSON.parse(await getRawBody(ctx.req, { encoding: 'utf8', limit: '1mb' })) });
  await next();
});
koa.use(koaMiddleware(apollo));

const server = createServer(koa.callback());
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening ${(server.address() as AddressInfo).port} (F_apollo)\n`));
process.on('SIGTERM', () => server.close(() => void apollo.stop().then(() => process.exit(0))));
