/**
 * The one preparation of a GraphQL request, for both transports: HTTP (Apollo Server, through its extension
 * points) and WebSocket (graphql-ws's `onSubscribe`). What a request passes before anything executes:
 *
 * 1. parsing, with graphql-js's token limit, into a bounded document store shared by both transports;
 * 2. validation: the GraphQL spec's rules (graphql-js `specifiedRules`) plus the query limits (depth, aliases,
 *    directives: query-limits.ts) and, when introspection is off, the introspection refusal;
 * 3. the operation: of a type the transport runs (HTTP: queries and mutations; WebSocket: subscriptions), its
 *    variables coerced;
 * 4. its shape and cost (operation-shape.ts, src/rate-limit/cost.ts): the size ceiling and the page sizes,
 *    then the charge through the rate-limit gate.
 *
 * Apollo does steps 1–2 itself with what this module gives it (`apollo`: the parse options, the extra
 * validation rules, the document store) and steps 3–4 through this module's plugin (`didResolveOperation`).
 * The WebSocket server calls `prepare`, which runs every step here with the same store, rules and functions:
 * a rule added here holds on both. Trusted documents (trusted-documents.ts) are checked here at start with the same
 * rules; a request then runs one as it would run its text.
 */
import { createHash } from 'node:crypto';
import type { ApolloServerPlugin, DocumentStore, GraphQLRequestListener } from '@apollo/server';
import { InMemoryLRUCache } from '@apollo/utils.keyvaluecache';
import {
  GraphQLError,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ParseOptions,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';
import type { Config } from '../../config.js';
import { validationFailed } from '../../domain/errors.js';
import type { Actor } from '../../domain/index.js';
import { pageSize } from '../../domain/pagination.js';
import { idCount, MAX_IDS } from '../../domain/validate.js';
import { keyRefusal } from '../../http/authentication.js';
import type { AppState } from '../../http/context.js';
import { FREE, graphqlCost, RateLimitRefusal, type RateLimitGate } from '../../rate-limit/index.js';
import type { GraphQLContext } from '../context.js';
import { requestErrorMessage, toRequestError, type ErrorHooks } from './error.mapping.js';
import { cachedOperationShape, coerceVariables, type OperationShape } from './operation-shape.js';
import { queryLimits, repeatedFieldsRefusal } from './query-limits.js';
import {
  namesDocument,
  readManifest,
  isRecord,
  trustedDocuments,
  withDocumentText,
  type DocumentCheck,
  type TrustedDocuments,
} from './trusted-documents.js';

/** Validated documents kept, and the source characters they may hold in all. */
const CACHED_DOCUMENTS = 500;
const CACHED_SOURCE_CHARS = 4 * 1024 * 1024;

/** HTTP (queries and mutations; Apollo refuses a GET mutation itself) or a WebSocket (subscriptions only). */
export type Transport = 'http' | 'websocket';

/** Who sends the request: a keyed actor, or a keyless address (HTTP only). */
export type Caller = { actor: Actor } | { actor?: undefined; address: string; authFailure?: AppState['authFailure'] };

/** What the answer's `extensions.cost` shows. */
export interface OperationCost {
  /** The operation's cost under the shared policy, read with the request's variables. */
  requested: number;
  /** Points taken: from the account's budget with a key, from the per-address limiter (1) without. */
  charged: number;
}

/** A request that passed every step and was charged. */
export interface Prepared {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  /** The variables as execution coerces them (defaults applied). */
  variables: Record<string, unknown>;
  /** The variables as the client sent them (what execution reads). */
  rawVariables: Record<string, unknown> | undefined;
  /** The operation's name in the document, if it has one. */
  operationName?: string;
  /** `query pets`, `subscription inventoryChanged`: a bounded label for logs and metrics. */
  label: string;
  cost: OperationCost;
  /** The rate-limit headers of the charge. */
  headers: Record<string, string>;
}

/**
 * A request refused before anything ran. `errors` are known errors (DomainError, the gate's refusal, an
 * authentication error: `describeError` maps each to its code and status); `charged` says whether a point
 * was taken anyway (a keyless request past the per-address limiter's charge).
 */
export interface Refusal {
  refused: readonly unknown[];
  /** The operation's label, once the operation is known (metrics name refused operations too). */
  label?: string;
  /** The operation's name in the document, once the operation is known. */
  operationName?: string;
  /** The rate-limit headers when a point was taken before the refusal (a keyless request). */
  headers?: Record<string, string>;
  /** The variables do not fit the operation (over HTTP, execution refuses them itself). */
  variables?: true;
  /**
   * A refusal by the rate limit shows the operation's cost, nothing charged: a client tells a request that costs
   * more than a whole window (`requested` above `X-RateLimit-Limit`; it never passes) from one that may wait.
   */
  cost?: OperationCost;
}

export const isRefusal = (value: Prepared | Refusal | DocumentNode): value is Refusal => 'refused' in value;

export { isRecord };

/**
 * The body rule of both transports: one JSON object per request (no batches, no scalars). A scalar
 * (`false`, `0`, `""`) is refused here as well.
 */
export function checkBody(body: unknown): void {
  if (Array.isArray(body)) throw validationFailed('Batched requests are not supported; send one operation per request.');
  if (body !== undefined && body !== null && typeof body !== 'object') {
    throw validationFailed('The request body must be a JSON object such as {"query": "…"}.', [
      { path: 'body', message: 'must be an object' },
    ]);
  }
}

/** The fields of a request (400 otherwise), in the words of GraphQL over HTTP's servers (Apollo Server's). */
function readRequest(body: unknown): { query: string; variables?: Record<string, unknown>; operationName?: string } {
  checkBody(body);
  const { query, variables, operationName } = isRecord(body) ? body : {};
  if (query !== undefined && query !== null && query !== '' && typeof query !== 'string')
    throw validationFailed('GraphQL queries must be strings.');
  if (typeof query !== 'string' || query === '') throw validationFailed('GraphQL operations must contain a non-empty `query`.');
  if (variables !== undefined && variables !== null && !isRecord(variables))
    throw validationFailed('`variables` must be an object if provided.');
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string')
    throw validationFailed('`operationName` must be a string if provided.');
  return { query, variables: variables ?? undefined, operationName: operationName ?? undefined };
}

/** Introspection refused when `GRAPHQL_INTROSPECTION` is off (in production by default). */
const noIntrospection: ValidationRule = (context: ValidationContext) => ({
  Field(node) {
    if (node.name.value === '__schema' || node.name.value === '__type') {
      context.reportError(
        new GraphQLError('Introspection is turned off on this server (GRAPHQL_INTROSPECTION=false).', {
          nodes: [node],
        }),
      );
    }
  },
});

/** Which operations each transport runs, and what the other one is told. */
const WRONG_TRANSPORT: Record<Transport, (operation: OperationDefinitionNode) => Error | undefined> = {
  http: (o) =>
    o.operation === 'subscription'
      ? validationFailed(
          'Subscriptions run over the graphql-ws protocol (a WebSocket to /graphql, key in connection_init); use POST for queries and mutations.',
        )
      : undefined,
  websocket: (o) =>
    o.operation !== 'subscription'
      ? validationFailed('Only subscriptions run over WebSocket; send queries and mutations to POST /graphql.')
      : undefined,
};

/**
 * A parse, validation or variable error of graphql-js as a refusal: the catalogue's VALIDATION_FAILED (the
 * original error), keeping where in the document it is (`locations`, as GraphQL over HTTP answers them).
 */
const requestError = (error: GraphQLError): GraphQLError => {
  const message = requestErrorMessage(error.message);
  return new GraphQLError(message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    originalError: validationFailed(message),
  });
};

export interface RequestPreparationOptions {
  schema: GraphQLSchema;
  gate: RateLimitGate;
  limits: Config['graphqlLimits'];
  introspection: boolean;
  /** The manifest of trusted documents, if any: read and checked here (the start fails on a bad one). */
  trusted?: Config['trustedDocuments'];
}

export interface RequestPreparation {
  /** What Apollo Server is configured with, so that its own parse and validation are this module's. */
  apollo: {
    parseOptions: ParseOptions;
    /** Apollo runs these after graphql-js's `specifiedRules`. */
    validationRules: ValidationRule[];
    documentStore: DocumentStore;
    /**
     * Steps 3–4 (`didResolveOperation`), the cost in the answer's extensions (`willSendResponse`), and the error
     * hooks given: the service's one plugin with request hooks.
     */
    plugin(errors: ErrorHooks): ApolloServerPlugin<GraphQLContext>;
  };
  /**
   * Every step: the prepared operation, charged, or why not. `beforeCharge` runs once the operation is admitted, just before the charge; an error it returns
   * refuses the request before the operation's charge (the plan cap of subscriptions; the caller charges the refusal).
   */
  prepare(body: unknown, caller: Caller, transport: Transport, beforeCharge?: () => Promise<unknown>): Promise<Prepared | Refusal>;
  /**
   * Steps 4–5 for a document that is parsed and validated: the operation checked, priced and charged. Nothing is
   * charged for a refusal, but for a keyless caller's point.
   */
  admit(
    document: DocumentNode,
    operation: OperationDefinitionNode,
    rawVariables: Record<string, unknown> | undefined,
    caller: Caller,
    transport: Transport,
    beforeCharge?: () => Promise<unknown>,
  ): Promise<Prepared | Refusal>;
  /** What running the operation once costs under the shared policy (a pushed subscription answer is re-charged from it). */
  cost(document: DocumentNode, operation: OperationDefinitionNode, variables: Record<string, unknown>): number;
  /** The trusted documents (none without a manifest). */
  trusted: TrustedDocuments;
}

export function requestPreparation({
  schema,
  gate,
  limits,
  introspection,
  trusted: manifest,
}: RequestPreparationOptions): RequestPreparation {
  const { maxCost: maxNodes } = limits;
  const armor = queryLimits(limits);
  const extraRules = [...(introspection ? [] : [noIntrospection]), ...armor.validationRules];
  const rules = [...specifiedRules, ...extraRules];
  const parseOptions = armor.parseOptions;
  // Apollo keys its entries `<schema hash>:<SHA-256 of the query>`; the WebSocket's entries are keyed apart.
  const documents = new InMemoryLRUCache<DocumentNode>({
    max: CACHED_DOCUMENTS,
    maxSize: CACHED_SOURCE_CHARS,
    sizeCalculation: (document) => Math.max(1, document.loc?.end ?? 1),
  });
  /** Steps 1–2 on a text: its document, or the refusals. */
  const parseAndValidate = (query: string): DocumentNode | Refusal => {
    let document: DocumentNode;
    try {
      document = parse(query, parseOptions);
    } catch (error) {
      return {
        refused: [error instanceof GraphQLError ? requestError(error) : validationFailed(requestErrorMessage((error as Error).message))],
      };
    }
    const repeated = repeatedFieldsRefusal(document, limits.maxRepeatedFields);
    if (repeated) return { refused: [repeated] };
    const invalid = validate(schema, document, rules);
    return invalid.length ? { refused: invalid.map(requestError) } : document;
  };
  const checkTrusted: DocumentCheck = (text) => {
    const checked = parseAndValidate(text);
    return isRefusal(checked) ? { errors: checked.refused.map((e) => (e as Error).message) } : checked;
  };
  const trusted = trustedDocuments(manifest?.file ? readManifest(manifest.file, checkTrusted) : new Map(), manifest?.only ?? false);
  /** Parse and validate (steps 1–2) for the WebSocket, through the same store. */
  const documentOf = async (query: string): Promise<DocumentNode | Refusal> => {
    const key = `websocket:${createHash('sha256').update(query).digest('hex')}`;
    const cached = await documents.get(key);
    if (cached) return cached;
    const document = parseAndValidate(query);
    if (!isRefusal(document)) await documents.set(key, document);
    return document;
  };

  const readings = new WeakMap<OperationShape, { label: string; requested: number }>();
  const admit: RequestPreparation['admit'] = async (document, operation, rawVariables, caller, transport, beforeCharge) => {
    const operationName = operation.name?.value;
    const wrong = WRONG_TRANSPORT[transport](operation);
    if (wrong) return { operationName, refused: [wrong] };
    const coerced = coerceVariables(schema, operation, rawVariables);
    if (!('variables' in coerced)) return { operationName, variables: true, refused: coerced.errors.map(requestError) };
    const { variables } = coerced;
    const shape = cachedOperationShape(schema, document, operation, variables, maxNodes);
    // Label and cost follow from the shape, which is cached: computed once per shape.
    let read = readings.get(shape);
    if (!read)
      readings.set(shape, (read = { label: operationLabel(operation.operation, shape.rootFields), requested: graphqlCost(shape) }));
    const { label, requested } = read;
    if (shape.overCeiling) {
      return {
        label,
        operationName,
        refused: [
          validationFailed(
            `Query size limit of ${maxNodes} exceeded: the answer could hold more than ${maxNodes} fields. Ask for smaller pages (first) or fewer nested lists.`,
          ),
        ],
      };
    }
    // A page size the domain refuses is refused here, before anything runs or is charged (the domain's own rule);
    // so are more ids than `nodes(ids:)` takes, which would otherwise be charged 1 per id, then refused.
    const tooManyIds = shape.nodesIds?.find((count) => count > MAX_IDS);
    if (shape.invalidPageSize !== undefined || tooManyIds !== undefined) {
      try {
        if (shape.invalidPageSize !== undefined) pageSize(shape.invalidPageSize, 'first');
        if (tooManyIds !== undefined) idCount(tooManyIds, 'ids');
      } catch (error) {
        return { label, operationName, refused: [error] };
      }
    }
    // Starting a subscription costs 1 (its pushed answers are charged as they go); any other operation its cost.
    const price = operation.operation === 'subscription' ? 1 : requested;
    // Awaited only when there is one (`await undefined` still costs two promises).
    const before = beforeCharge ? await beforeCharge() : undefined;
    if (before) return { label, operationName, refused: [before] };
    let headers: Record<string, string>;
    try {
      // Without a valid key every request, introspection included, takes a point from the address's limiter;
      // with one, a free operation takes one of the key's free requests.
      headers = caller.actor
        ? await gate.charge(caller.actor, price, price === 0 ? FREE : undefined)
        : await gate.anonymous(caller.address, true);
    } catch (error) {
      const limited = error instanceof RateLimitRefusal && error.code === 'RATE_LIMITED' && caller.actor;
      return { label, operationName, refused: [error], ...(limited ? { cost: { requested, charged: 0 } } : {}) };
    }
    if (!caller.actor) {
      const refusal = keyRefusal(caller.authFailure, shape.needsKey);
      if (refusal) return { label, operationName, refused: [refusal], headers };
    }
    return {
      document,
      operation,
      variables,
      rawVariables,
      operationName,
      label,
      cost: { requested, charged: caller.actor ? price : 1 },
      headers,
    };
  };

  const prepare: RequestPreparation['prepare'] = async (body, caller, transport, beforeCharge) => {
    let request: ReturnType<typeof readRequest>;
    try {
      // A trusted document named by `documentId` (the subscribe payload's `query` left empty) is its text; any
      // other text must be one the caller may send.
      const named = isRecord(body) && namesDocument(body);
      request = readRequest(named ? withDocumentText(trusted, body) : body);
      if (!named) trusted.checkText(request.query, caller.actor);
    } catch (error) {
      return { refused: [error] };
    }
    const document = await documentOf(request.query);
    if (isRefusal(document)) return document;
    const operation = getOperationAST(document, request.operationName);
    if (!operation) {
      const message =
        request.operationName !== undefined
          ? `Unknown operation named "${request.operationName}".`
          : 'Must provide operation name if query contains multiple operations.';
      return { refused: [validationFailed(message)] };
    }
    return admit(document, operation, request.variables, caller, transport, beforeCharge);
  };

  return {
    apollo: { parseOptions, validationRules: extraRules, documentStore: documents, plugin: (errors) => preparationPlugin(admit, errors) },
    prepare,
    admit,
    trusted,
    cost(document, operation, variables) {
      return graphqlCost(cachedOperationShape(schema, document, operation, variables, maxNodes));
    },
  };
}

/**
 * Steps 3–4 inside Apollo: once Apollo has parsed, validated and resolved the operation, and before any resolver
 * runs, the operation is admitted (checked, priced and charged). A refusal is thrown as a GraphQL error carrying
 * its HTTP status and headers (400, 401, 429 with Retry-After). Variables that do not fit the operation are left
 * to execution, which refuses them (400, Apollo 5's default) before any resolver runs; nothing
 * is charged for them. The answer of an executed operation shows its cost in `extensions.cost`.
 *
 * The service's one plugin with request hooks (the error hooks are given in): Apollo calls every hook of every
 * plugin's listener on every request, each a promise, so they share one listener.
 */
function preparationPlugin(admit: RequestPreparation['admit'], errors: ErrorHooks): ApolloServerPlugin<GraphQLContext> {
  // One listener for every request (the cost goes on the request's context), and hooks that answer with one settled
  // promise: Apollo awaits each hook of each listener, and every promise made per request is work (on Node 20 and 22
  // also the async hooks of AsyncLocalStorage).
  const settled = Promise.resolve();
  const listener: GraphQLRequestListener<GraphQLContext> = {
    didResolveOperation({ contextValue: ctx, operation, operationName, document, request, response }) {
      if (operationName) ctx.observed.operationName = operationName;
      if (!operation) return settled;
      const caller: Caller = ctx.actor ? { actor: ctx.actor } : { address: ctx.clientAddress, authFailure: ctx.authFailure };
      return admit(document, operation, request.variables, caller, 'http').then((admitted) => {
        if (admitted.label) ctx.observed.operation = admitted.label;
        // Apollo's HeaderMap keys by the lower-cased name itself.
        if (admitted.headers) for (const name in admitted.headers) response.http.headers.set(name, admitted.headers[name]!);
        if (!isRefusal(admitted)) {
          ctx.observed.cost = admitted.cost;
          return;
        }
        if (admitted.variables) return;
        if (admitted.cost) ctx.observed.refusedCost = admitted.cost;
        throw toRequestError(admitted.refused[0]);
      });
    },
    didEncounterErrors(requestContext) {
      errors.didEncounterErrors(requestContext);
      return settled;
    },
    willSendResponse(requestContext) {
      errors.willSendResponse(requestContext);
      const { response, contextValue } = requestContext;
      const { cost, refusedCost } = contextValue.observed;
      if ((!cost && !refusedCost) || response.body.kind !== 'single') return settled;
      const result = response.body.singleResult;
      // An executed request shows its cost, errors or not; one refused as a whole only when the rate limit refused it.
      const shown = result.data !== undefined ? cost : refusedCost;
      if (shown) result.extensions = { ...result.extensions, cost: shown };
      return settled;
    },
  };
  const started = Promise.resolve(listener);
  return { requestDidStart: () => started };
}

/** `query pets`, `mutation placeOrder`, or `query (several fields)`: never client input such as the operation name. */
function operationLabel(type: string, rootFields: readonly string[]): string {
  const names = new Set(rootFields);
  return `${type} ${names.size === 1 ? [...names][0]! : names.size === 0 ? '(none)' : '(several fields)'}`;
}
