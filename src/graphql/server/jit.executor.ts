import {
  BREAK,
  TypeInfo,
  execute,
  getNamedType,
  isAbstractType,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

/** What the executor runs: a prepared operation of a cached document, with the variables as the client sent them. */
export interface Runnable {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  rawVariables: Record<string, unknown> | undefined;
}

/** A result, and how its `{data}` is written as JSON (`JSON.stringify`, or the operation's compiled serializer). */
export interface Executed {
  result: ExecutionResult;
  stringify: (answer: { data: ExecutionResult['data'] }) => string;
}

/**
 * After how many answers an operation gets its compiled JSON serializer, where it pays (`SERIALIZER_PAYS`: Node 20): an
 * operation a client repeats (every real client's) is written by code made for its shape (on Node 20, for ten pets,
 * ~35k fewer instructions in `JSON.stringify`, ~19k back in string concatenation: docs/PERFORMANCE.md). Making it
 * costs a few ms once (more than compiling the query), so a document sent once or twice never pays it: a client
 * cycling new documents makes the service spend at most ~1/10 of that per request, less than each new document's own
 * parse, validation and compilation.
 */
export const SERIALIZE_AFTER = 10;

/**
 * Whether the compiled serializer pays on this engine: it does on V8 11 (Node 20), whose `JSON.stringify` it beats by
 * ~2–4% of a GraphQL read by ids; on V8 12 (Node 22) the two cost the same and on V8 13 (Node 24), whose
 * `JSON.stringify` is faster, it costs ~3% more (instructions per read, docs/PERFORMANCE.md). Where it does not pay,
 * every answer is written by one `JSON.stringify`.
 */
export const SERIALIZER_PAYS = Number(process.versions.v8.split('.')[0]) < 12;

export interface OperationExecutor {
  run(operation: Runnable, context: unknown): Promise<Executed>;
  /** How many operations each engine answered (tests read it). */
  answered: { jit: number; graphqlJs: number };
}

/**
 * The execution step of the GraphQL lane (graphql.facade.ts), on graphql-js or on graphql-jit (`GRAPHQL_EXECUTOR`).
 * With jit, every distinct query (document and operation) is compiled once into a JavaScript function of its
 * variables, which then runs instead of graphql-js's interpreter.
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
 * - documents with a response key `__proto__` (an alias: jit's object literals would take it as the prototype);
 * - a query whose jit result has errors (refused variables, a failing field, a null in a non-null
 *   position), or whose jit run throws, runs again on graphql-js, whose answer is sent. jit reports such errors differently
 *   (in another order, also under a parent already nulled, with a read-only `message`, without the `nodes` that give an error its `locations`).
 *   Queries have no side effects, so running one twice only costs time, and only on that path.
 */
export function operationExecutor(
  schema: GraphQLSchema,
  engine: 'jit' | 'graphql-js',
  /** After how many error-free jit answers an operation gets its compiled serializer (never where it does not pay). */
  serializeAfter = SERIALIZER_PAYS ? SERIALIZE_AFTER : Infinity,
): OperationExecutor {
  const answered = { jit: 0, graphqlJs: 0 };
  /**
   * Per operation of a cached document, its compiled query, how many answers it gave, and its serializer once it has
   * one. The document comes from the request preparation's bounded cache (the same object for the same text), so an
   * entry lives as long as its document.
   */
  const compiled = new WeakMap<OperationDefinitionNode, { query: CompiledQuery; answers: number; stringify: Executed['stringify'] }>();
  /** Per document: whether graphql-js runs it (jit cannot compile it, or `jitAnswersDiffer`). */
  const onGraphqlJs = new WeakMap<DocumentNode, boolean>();

  const run: OperationExecutor['run'] = async ({ document, operation, rawVariables: variables }, context) => {
    const operationName = operation.name?.value;
    const graphqlJs = async (): Promise<Executed> => {
      answered.graphqlJs++;
      return { result: await execute({ schema, document, contextValue: context, variableValues: variables, operationName }), stringify: JSON.stringify };
    };
    if (engine === 'graphql-js' || operation.operation !== 'query') return graphqlJs();
    let jsOnly = onGraphqlJs.get(document);
    if (jsOnly === undefined) onGraphqlJs.set(document, (jsOnly = jitAnswersDiffer(document)));
    if (jsOnly) return graphqlJs();
    // The same cached document and operation: the same compiled function.
    let entry = compiled.get(operation);
    if (!entry) {
      const query = compileQuery(schema, document, operationName, { disablingCapturingStackErrors: true });
      if (!isCompiledQuery(query)) {
        onGraphqlJs.set(document, true);
        return graphqlJs();
      }
      compiled.set(operation, (entry = { query, answers: 0, stringify: JSON.stringify }));
    }
    let result: ExecutionResult;
    try {
      result = await entry.query.query(undefined, context, variables ?? {});
    } catch {
      // jit itself failed (not a resolver: their errors are in the result): graphql-js answers instead.
      return graphqlJs();
    }
    if (result.errors?.length) return graphqlJs();
    answered.jit++;
    if (++entry.answers === serializeAfter) entry.stringify = compiledSerializer(schema, document, operationName) ?? JSON.stringify;
    return { result, stringify: entry.stringify };
  };

  return { run, answered };
}

/**
 * graphql-jit's serializer for the operation's error-free results (fast-json-stringify, from a JSON schema of the
 * selection), written byte for byte as `JSON.stringify` writes them (test/graphql/executors.test.ts compares the two,
 * and over HTTP on Node 20, where the service uses it). None where it would not be: a selection of a union or an
 * interface (its JSON schema merges the members' fields in one order, where each answer follows its own type's), or a
 * custom scalar (DateTime: not compiled).
 */
export function compiledSerializer(schema: GraphQLSchema, document: DocumentNode, operationName: string | undefined): Executed['stringify'] | undefined {
  const typeInfo = new TypeInfo(schema);
  let abstract = false;
  visit(
    document,
    visitWithTypeInfo(typeInfo, {
      Field() {
        const type = typeInfo.getType();
        if (type && isAbstractType(getNamedType(type))) {
          abstract = true;
          return BREAK;
        }
        return undefined;
      },
    }),
  );
  if (abstract) return undefined;
  const query = compileQuery(schema, document, operationName, { disablingCapturingStackErrors: true, customJSONSerializer: true });
  if (!isCompiledQuery(query)) return undefined;
  const compiled = query.stringify as Executed['stringify'];
  // A result the serializer cannot write (it throws on a value its schema does not expect) is written as before.
  return (answer) => {
    try {
      return compiled(answer);
    } catch {
      return JSON.stringify(answer);
    }
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
