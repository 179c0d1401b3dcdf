/**
 * The two library patches `npm install` applies (patches/, through patch-package; docs/DECISIONS.md, "Patched
 * libraries"): graphql-jit's compiled code builds a leaf field's error locations and path only when the field
 * fails (and a list item that is not a promise is written without two closures), and type-graphql hands a resolver
 * its arguments without a promise when they are not validated (and makes its field lists once). The first test of each
 * part fails on the unpatched library; the second shows that what the patch touches behaves as before.
 */
import 'reflect-metadata';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { GraphQLInt, GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString, execute, parse } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { Arg, Args, ArgsType, Field, InputType, Int, Query, Resolver, buildSchema } from 'type-graphql';
import { buildGraphQLSchema } from '../../src/graphql/schema/schema.builder.js';

/** graphql-jit's generated source of a query (its `debug` option keeps it). */
function compiledSource(schema: GraphQLSchema, query: string): string {
  const compiled = compileQuery(schema, parse(query), undefined, { disablingCapturingStackErrors: true, debug: true } as never);
  assert.ok(isCompiledQuery(compiled));
  return (compiled as unknown as { __DO_NOT_USE_THIS_OR_YOU_WILL_BE_FIRED_compilation: string }).__DO_NOT_USE_THIS_OR_YOU_WILL_BE_FIRED_compilation;
}

describe('graphql-jit, patched: a leaf field allocates its error details only on error', () => {
  it('when the service\'s read by ids is compiled, then every leaf of a list item is checked before any error location or path is built', async () => {
    const source = compiledSource(await buildGraphQLSchema(), 'query ($ids: [ID!]) { pets(filter: { ids: $ids }, first: 100) { edges { node { id name categoryId status } } } }');
    const checks = source.split('\n').filter((line) => /\.rt\.check(NonNull|Nullable)Leaf\(/.test(line));
    assert.equal(checks.length, 4, source);
    // Unpatched, each item's object literal calls checkNonNullLeaf with `[{"line":…}]` and `["pets","edges",idx0,…]`
    // as arguments, allocated for every item whether or not anything fails.
    for (const line of checks) assert.match(line, /^\s*return __leafValue == null (\|\| __leafValue instanceof Error \?|\? null : __leafValue instanceof Error \?)/);
    assert.match(source, /"id":\s*ID__currentItemnodeidLeaf\(__context, __currentItem\.node\.id, idx0\)/);
    // A list item that is not a promise goes to its item handler directly (unpatched: two closures per item).
    assert.match(source, /if \(!__context\.rt\.isPromise\(__currentItem\)\) \{\s*PetConnection__fieldpetsedgesMapItemHandler\(__context, resultArray, __currentItem, idx0\);\s*return;/);
  });

  it('when leaves of list items fail (a value the scalar refuses, an Error returned, a null in a non-null leaf), also in items that are promises, then jit reports each at its path as graphql-js does', async () => {
    type Item = { id: number; size: number; code: string | Error | null };
    const items: Item[] = [
      { id: 1, size: 1, code: 'a' },
      { id: 2, size: 2 ** 40, code: 'b' },
      { id: 3, size: 3, code: new Error('code failed') },
      { id: 4, size: 4, code: null },
    ];
    const Item = new GraphQLObjectType<Item>({
      name: 'Item',
      fields: { id: { type: new GraphQLNonNull(GraphQLInt) }, size: { type: GraphQLInt }, code: { type: new GraphQLNonNull(GraphQLString) } },
    });
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          items: { type: new GraphQLList(Item), resolve: () => items },
          // Items that are promises take the list's other path, which the patch leaves as it was. (Not a rejected
          // one: graphql-jit 0.8.9 appends its null at the list's end rather than at its index, patched or not; an
          // answer with errors is graphql-js's anyway, src/graphql/server/jit.executor.ts.)
          later: { type: new GraphQLList(Item), resolve: () => [Promise.resolve(items[0]), Promise.resolve(items[1]), items[2]] },
        },
      }),
    });
    const query = '{ items { id size code } later { id size code } }';
    const compiled = compileQuery(schema, parse(query));
    assert.ok(isCompiledQuery(compiled));
    const jit = await compiled.query(undefined, {}, {});
    const js = await execute({ schema, document: parse(query) });
    const described = (result: typeof js) => ({
      data: JSON.parse(JSON.stringify(result.data)) as unknown,
      errors: result.errors?.map((e) => ({ message: e.message, path: e.path, locations: e.locations })).sort((a, b) => String(a.path).localeCompare(String(b.path))),
    });
    assert.deepEqual(described(jit), described(js));
    assert.equal(jit.errors?.length, 5);
  });
});

@InputType('PatchFilter')
class PatchFilter {
  @Field(() => [String], { nullable: true })
  names?: string[];
}

@ArgsType()
class PatchPage {
  @Field(() => Int, { nullable: true, defaultValue: 10 })
  first?: number;
}

const calls: Array<{ filter: unknown; page: unknown }> = [];

@Resolver()
class PatchResolver {
  @Query(() => String)
  listed(@Arg('filter', () => PatchFilter, { nullable: true }) filter: PatchFilter | null, @Args(() => PatchPage) page: PatchPage): string {
    calls.push({ filter, page });
    return `${filter?.names?.join('+') ?? '-'} ${page.first}`;
  }
}

describe('type-graphql, patched: arguments that are not validated reach the resolver without a promise', () => {
  const schemaWith = (options: Partial<Parameters<typeof buildSchema>[0]>) => buildSchema({ resolvers: [PatchResolver], ...options } as Parameters<typeof buildSchema>[0]);

  it('when validation is off (the service\'s setting), then a resolver with arguments runs in the same tick, its arguments converted to their classes as before', async () => {
    const schema = await schemaWith({ validate: false });
    const resolve = schema.getQueryType()!.getFields().listed!.resolve!;
    calls.length = 0;
    const result = resolve(undefined, { filter: { names: ['a', 'b'] }, first: 3 }, {}, {} as never);
    // Unpatched, each argument went through an async validateArg and a Promise.all: nothing ran yet.
    assert.equal(calls.length, 1);
    assert.equal(result, 'a+b 3');
    assert.ok(calls[0]!.filter instanceof PatchFilter);
    assert.ok(calls[0]!.page instanceof PatchPage);
    assert.deepEqual({ ...(calls[0]!.filter as object) }, { names: ['a', 'b'] });
    // The converted arguments of a second call: the same classes and values, from field lists made once.
    resolve(undefined, { filter: { names: ['c'] } }, {}, {} as never);
    assert.ok(calls[1]!.filter instanceof PatchFilter);
    assert.deepEqual({ ...(calls[1]!.filter as object) }, { names: ['c'] });
    assert.deepEqual({ ...(calls[1]!.page as object) }, {});
  });

  it('when a validation function is set, then every argument is still validated before the resolver runs', async () => {
    const seen: unknown[] = [];
    const schema = await schemaWith({
      validateFn: (value: unknown) => {
        seen.push(value);
        if (value instanceof PatchFilter && value.names?.includes('bad')) throw new Error('refused by validateFn');
      },
    });
    calls.length = 0;
    const ok = await execute({ schema, document: parse('{ listed(filter: { names: ["x"] }, first: 2) }') });
    assert.deepEqual(JSON.parse(JSON.stringify(ok)), { data: { listed: 'x 2' } });
    assert.equal(seen.length, 2);
    const refused = await execute({ schema, document: parse('{ listed(filter: { names: ["bad"] }) }') });
    assert.equal(refused.errors?.[0]?.message, 'refused by validateFn');
    assert.equal(calls.length, 1);
  });
});
