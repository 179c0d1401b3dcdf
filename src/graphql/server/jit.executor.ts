import type { ApolloServerOptionsWithGateway, BaseContext } from '@apollo/server';
import { BREAK, execute, visit, type DocumentNode, type ExecutionResult, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/** What the executor runs: a parsed and validated document, its operation, the variables as the client sent them. */
export interface Runnable {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  rawVariables: Record<string, unknown> | undefined;
}

type GatewayInterface = ApolloServerOptionsWithGateway<BaseContext>['gateway'];
type GatewayExecutor = NonNullable<Awaited<ReturnType<GatewayInterface['load']>>['executor']>;

export interface OperationExecutor {
  run(operation: Runnable, context: unknown): Promise<ExecutionResult>;
  /** How many operations each engine answered (tests read it). */
  answered: { jit: number; graphqlJs: number };
}

/**
 * The execution step, on graphql-js or on graphql-jit (`GRAPHQL_EXECUTOR`). With jit, every distinct query
 * (document and operation) is compiled once into a JavaScript function of its variables, which then runs instead
 * of graphql-js's interpreter. Apollo Server runs it through its `gateway` option (`jitGateway`).
 *
 * jit answers only what it answers exactly as graphql-js would: a query that completes without errors.
 * Everything else is graphql-js's, so that every answer is identical under both executors
 * (test/graphql/executors.test.ts compares them):
 * - mutations (their root fields write one after the other; jit would gain nothing beside the writes);
 * - no operation resolved (an unknown `operationName`, several operations without one), or a document
 *   jit does not compile;
 * - documents with `@skip` or `@include`: jit orders the answer's keys by where a field first appears in the
 *   document, skipped selections included, where graphql-js orders them by the first selection that is kept;
 * - documents with a response key `__proto__` (an alias: jit's object literals would take it as the prototype);
 * - a query whose jit result has errors (refused variables, a failing field, a null in a non-null
 *   position), or whose jit run throws, runs again on graphql-js, whose answer is sent. jit reports such errors
 *   differently (in another order, also under a parent already nulled, without the `nodes` that give an error its
 *   `locations`). Queries have no side effects, so running one twice only costs time, and only on that path.
 */
export function operationExecutor(schema: GraphQLSchema, engine: 'jit' | 'graphql-js'): OperationExecutor {
  const answered = { jit: 0, graphqlJs: 0 };
  /**
   * Per operation of a cached document, its compiled query. Apollo takes the document from its bounded document
   * store (the same object for the same text), so an entry lives as long as its document.
   */
  const compiled = new WeakMap<OperationDefinitionNode, CompiledQuery>();
  /** Per document: whether graphql-js runs it (jit cannot compile it, or `jitAnswersDiffer`). */
  const onGraphqlJs = new WeakMap<DocumentNode, boolean>();

  // Not async: the usual path returns jit's own promise, with no promise of its own around it (each costs the
  // process's async hooks; bench scenario gql-ids).
  const run: OperationExecutor['run'] = ({ document, operation, rawVariables: variables }, context) => {
    const operationName = operation.name?.value;
    const graphqlJs = async (): Promise<ExecutionResult> => {
      answered.graphqlJs++;
      return execute({ schema, document, contextValue: context, variableValues: variables, operationName });
    };
    if (engine === 'graphql-js' || operation.operation !== 'query') return graphqlJs();
    let jsOnly = onGraphqlJs.get(document);
    if (jsOnly === undefined) onGraphqlJs.set(document, (jsOnly = jitAnswersDiffer(document)));
    if (jsOnly) return graphqlJs();
    let query = compiled.get(operation);
    if (!query) {
      const result = compileQuery(schema, document, operationName, { disablingCapturingStackErrors: true });
      if (!isCompiledQuery(result)) {
        onGraphqlJs.set(document, true);
        return graphqlJs();
      }
      compiled.set(operation, (query = result));
    }
    const checked = (result: ExecutionResult): ExecutionResult | Promise<ExecutionResult> => {
      if (result.errors?.length) return graphqlJs();
      answered.jit++;
      return result;
    };
    let ran: ExecutionResult | Promise<ExecutionResult>;
    try {
      ran = query.query(undefined, context, variables ?? {});
    } catch {
      // jit itself failed (not a resolver: their errors are in the result): graphql-js answers instead.
      return graphqlJs();
    }
    return ran instanceof Promise ? ran.then(checked, graphqlJs) : Promise.resolve(checked(ran));
  };

  return { run, answered };
}

/**
 * The executor as Apollo Server's `gateway`: the one option through which Apollo lets its execution step be
 * replaced. The gateway hands Apollo the schema and returns the executor; everything before execution (parsing,
 * validation, the document store, the plugins, the cost and the charge) and after it (error formatting, the
 * HTTP answer) stays Apollo's. An operation Apollo could not resolve runs on graphql-js, which says why.
 */
export function jitGateway(schema: GraphQLSchema, executor: OperationExecutor): GatewayInterface {
  const gatewayExecutor: GatewayExecutor = (request) => {
    const { document, operation, context } = request;
    const rawVariables = request.request.variables;
    if (!operation) {
      executor.answered.graphqlJs++;
      return Promise.resolve(
        execute({
          schema,
          document,
          contextValue: context,
          variableValues: rawVariables,
          operationName: request.request.operationName,
        }),
      );
    }
    return executor.run({ document, operation, rawVariables }, context);
  };
  return {
    async load() {
      return { executor: gatewayExecutor };
    },
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => {};
    },
    async stop() {},
  };
}

/**
 * Whether jit's answer to the document could differ from graphql-js's: it uses `@skip` or `@include` (key order), or
 * a response key is `__proto__` (jit builds its objects as literals, where that key sets the prototype: the field
 * would be missing from the answer; graphql-js keeps it).
 */
function jitAnswersDiffer(document: DocumentNode): boolean {
  let found = false;
  visit(document, {
    Directive(node) {
      if (node.name.value === 'skip' || node.name.value === 'include') {
        found = true;
        return BREAK;
      }
      return undefined;
    },
    Field(node) {
      if ((node.alias ?? node.name).value === '__proto__') {
        found = true;
        return BREAK;
      }
      return undefined;
    },
  });
  return found;
}
