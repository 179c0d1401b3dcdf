import type { ExecutionResult, GraphQLSchema } from 'graphql';
import type { Context } from 'koa';
import type { RateLimitGate } from '../../rate-limit/index.js';
import type { GraphQLContext, PriorCharge } from '../context.js';
import type { PreparedQuery } from './jit.executor.js';
import { priceOperation, type OperationPrice } from './rate-limit.plugin.js';

/** Distinct `Accept` values whose answer type is remembered (first come; any other one goes through Apollo). */
const ACCEPT_VALUES = 64;
/** Apollo's answer type when the request has no `Accept`. */
const APPLICATION_JSON = 'application/json; charset=utf-8';

interface FastPathOptions {
  schema: GraphQLSchema;
  gate: RateLimitGate;
  maxNodes: number;
  /** The query Apollo already ran on graphql-jit with this text and operation name (jit.executor.ts). */
  prepared(query: string, operationName: string | undefined): PreparedQuery | undefined;
  /** Counted as answered by jit (tests read the gateway's counters). */
  answeredByJit(): void;
}

/**
 * What the fast path did with a request: answered it; left it to Apollo untouched (`undefined`); or charged
 * it and left it to Apollo (the charge was refused, or the result has errors), which must not charge again.
 */
type FastPathOutcome = true | undefined | { charged: PriorCharge };

interface FastPath {
  /** Tries to answer a POST whose JSON body is read; Apollo answers whatever this does not. */
  answer(ctx: Context, context: GraphQLContext, body: unknown): Promise<FastPathOutcome>;
  /** After Apollo answered a POST: learns the answer type Apollo chose for the request's `Accept`. */
  learn(ctx: Context): void;
}

const isRecord = (value: unknown): value is Record<string, unknown> => !!value && typeof value === 'object' && !Array.isArray(value);

/**
 * The GraphQL fast path: a query Apollo has already parsed, validated, resolved and run on graphql-jit (the same
 * text and operation name) is answered again without Apollo's per-request pipeline, with the answer Apollo would
 * give: the same cost analysis and charge (`priceOperation`, the gate), the same compiled function over the same
 * per-request context (own DataLoaders), the same body (`{"data":…,"extensions":{"cost":…}}` and a newline) and
 * headers set in Apollo's order through Koa, as `@as-integrations/koa` sets them.
 *
 * Only the plain success is answered here: a keyed caller, a POST body Apollo would take as it is, an `Accept`
 * whose answer type Apollo already chose once, variables that fit, a size under the ceiling, a charge the gate
 * grants and a result without errors. Everything else is Apollo's: before the charge untouched (nothing was done
 * that shows), after it with the charge handed over (`charged`), so Apollo answers exactly as without this path
 * and the request is charged once. Queries have no side effects, so a result with errors being run again by
 * Apollo only costs time, on that path only (as jit.executor.ts already does with graphql-js).
 */
export function graphqlFastPath({ schema, gate, maxNodes, prepared, answeredByJit }: FastPathOptions): FastPath {
  /** `Accept` value → the answer type Apollo chose for it (Negotiator over Apollo's own list). */
  const answerTypes = new Map<string, string>();
  const answerTypeOf = (ctx: Context): string | undefined => {
    const accept = ctx.req.headers.accept;
    return accept ? answerTypes.get(accept) : APPLICATION_JSON;
  };

  return {
    async answer(ctx, context, body) {
      const actor = context.actor;
      if (!actor || !isRecord(body)) return undefined;
      // What Apollo's runHttpQuery takes from a POST body, and refuses (400) otherwise.
      const { query, variables, operationName, extensions } = body;
      if (typeof query !== 'string' || query === '') return undefined;
      if (variables !== undefined && variables !== null && !isRecord(variables)) return undefined;
      if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return undefined;
      // Any extension Apollo might act on (persisted queries, which are off and refused) is Apollo's.
      if (extensions !== undefined && extensions !== null && !(isRecord(extensions) && !('persistedQuery' in extensions))) return undefined;
      const answerType = answerTypeOf(ctx);
      if (!answerType) return undefined;
      const entry = prepared(query, typeof operationName === 'string' ? operationName : undefined);
      if (!entry) return undefined;
      const { document, operation, compiled } = entry;
      const variableValues = isRecord(variables) ? variables : undefined;

      // The rate-limit plugin's didResolveOperation, as Apollo would run it (rate-limit.plugin.ts).
      let priced: OperationPrice;
      try {
        priced = priceOperation(schema, document, operation, variableValues, maxNodes);
      } catch {
        return undefined;
      }
      if (priced.refused) return undefined;
      if (operation.name?.value) context.observed.operationName = operation.name.value;
      context.observed.operation = priced.label;
      const cost = priced.requested;
      let headers: Record<string, string>;
      try {
        headers = await gate.charge(actor, cost);
      } catch (error) {
        return { charged: { error } };
      }

      let result: ExecutionResult;
      try {
        result = await compiled.query(undefined, context, variableValues ?? {});
      } catch {
        return { charged: { headers } };
      }
      if (result.errors !== undefined || result.data === undefined) return { charged: { headers } };
      // Apollo's body: its fields in Apollo's order (errors, data, extensions), the cost extension, and a newline.
      let text: string;
      try {
        text = `${JSON.stringify({ data: result.data, extensions: { ...result.extensions, cost: { requested: cost, charged: cost } } })}\n`;
      } catch {
        return { charged: { headers } };
      }
      answeredByJit();
      ctx.body = text;
      // Apollo's headers in its order: the plugin's (lower-cased, as its HeaderMap keeps them), then the answer type.
      for (const name in headers) ctx.set(name.toLowerCase(), headers[name]!);
      ctx.set('content-type', answerType);
      return true;
    },

    learn(ctx) {
      const accept = ctx.req.headers.accept;
      // A POST answered 200 got its type from Apollo's negotiation over this Accept (never its fallback for errors).
      if (!accept || ctx.status !== 200 || answerTypes.has(accept) || answerTypes.size >= ACCEPT_VALUES) return;
      const type = ctx.response.get('content-type');
      if (typeof type === 'string' && type) answerTypes.set(accept, type);
    },
  };
}
