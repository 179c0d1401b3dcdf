import type { ApolloServerOptionsWithGateway, BaseContext } from '@apollo/server';
import { BREAK, execute, visit, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

type GatewayInterface = ApolloServerOptionsWithGateway<BaseContext>['gateway'];
type GatewayExecutor = NonNullable<Awaited<ReturnType<GatewayInterface['load']>>['executor']>;

/**
 * Apollo's execution step as graphql-jit: every distinct query (document text and operation name) is
 * compiled once into a JavaScript function of its variables, which then runs instead of graphql-js's
 * interpreter. Plugged in through Apollo's `gateway` option, the one place Apollo lets its executor be
 * replaced: the gateway hands Apollo our schema and returns this executor; everything before execution
 * (parsing, validation, the document cache, the plugins, the cost and rate limits) and after it (error
 * formatting, the HTTP answer) stays Apollo's.
 *
 * jit answers only what it answers exactly as graphql-js would: a query that completes without errors.
 * Everything else is graphql-js's, so that every answer is identical under both executors
 * (test/graphql/executors.test.ts compares them):
 * - mutations (their root fields write one after the other; jit would gain nothing beside the writes);
 * - no operation resolved (an unknown `operationName`, several operations without one), or a document
 *   jit does not compile;
 * - documents with `@skip` or `@include`: jit orders the answer's keys by where a field first appears in the
 *   document, skipped selections included, where graphql-js orders them by the first selection that is kept
 *   (`{ ... @include(if: false) { name } ...F }` with `F` = `{ status name }` answers `name, status` on jit,
 *   `status, name` on graphql-js);
 * - a query whose jit result has errors (refused variables, a failing field, a null in a non-null
 *   position), or whose jit run throws, runs again on graphql-js, whose answer is sent. jit reports such errors differently
 *   (in another order, also under a parent already nulled, with a read-only `message`, without the `nodes` Apollo reads to make refused variables a 400).
 *   Queries have no side effects, so running one twice only costs time, and only on that path.
 */
export function jitGateway(schema: GraphQLSchema): GatewayInterface & { answered: { jit: number; graphqlJs: number } } {
  /** How many operations each engine answered (tests read it). */
  const answered = { jit: 0, graphqlJs: 0 };
  /**
   * Per operation of a cached document, its compiled query. Apollo takes the document from the request
   * preparation's bounded cache (the same object for the same text), so an entry lives as long as its document.
   */
  const compiled = new WeakMap<OperationDefinitionNode, CompiledQuery>();
  /** Per document: whether graphql-js runs it (jit cannot compile it, or it has `@skip`/`@include`). */
  const onGraphqlJs = new WeakMap<DocumentNode, boolean>();

  const executor: GatewayExecutor = async (request) => {
    const { document, operation, context } = request;
    const operationName = request.request.operationName ?? null;
    const variables = request.request.variables;
    const graphqlJs = () => (answered.graphqlJs++, execute({ schema, document, contextValue: context, variableValues: variables, operationName }) as Promise<ExecutionResult>);
    if (operation?.operation !== 'query') return graphqlJs();
    let jsOnly = onGraphqlJs.get(document);
    if (jsOnly === undefined) onGraphqlJs.set(document, (jsOnly = hasSkipOrInclude(document)));
    if (jsOnly) return graphqlJs();
    // The same cached document and operation: the same compiled function.
    let query = compiled.get(operation);
    if (!query) {
      const result = compileQuery(schema, document, operationName ?? undefined, { disablingCapturingStackErrors: true });
      if (!isCompiledQuery(result)) {
        onGraphqlJs.set(document, true);
        return graphqlJs();
      }
      compiled.set(operation, (query = result));
    }
    let result: ExecutionResult;
    try {
      result = await query.query(undefined, context, variables ?? {});
    } catch {
      // jit itself failed (not a resolver: their errors are in the result): graphql-js answers instead.
      return graphqlJs();
    }
    if (result.errors?.length) return graphqlJs();
    answered.jit++;
    return result;
  };

  return {
    answered,
    async load() {
      return { executor };
    },
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async stop() {},
  };
}

/** Whether the document uses `@skip` or `@include` anywhere. */
function hasSkipOrInclude(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value === 'skip' || node.name.value === 'include') {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}
