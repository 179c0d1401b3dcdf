/**
 * The OpenTelemetry SDK, started by src/main.ts before any of the app's modules load, and only when the
 * standard variables ask for traces (`tracingRequested` in ./tracing.ts). Everything else comes from
 * the SDK's own `OTEL_*` variables: the exporter and its protocol (OTLP over HTTP, protobuf by default,
 * `OTEL_EXPORTER_OTLP_PROTOCOL=http/json` for JSON), the sampler (`OTEL_TRACES_SAMPLER`), the service
 * name (`OTEL_SERVICE_NAME`, `petstore` unless set), the batch processor's delays. Traces only: metrics
 * stay on `GET /metrics`, logs on stdout.
 *
 * The app is ES modules: instrumentations patch what an `import` returns through import-in-the-middle's
 * loader hook, registered here for the instrumented modules only (every other module loads untouched).
 */
import { ClientRequest } from 'node:http';
import { createRequire, register } from 'node:module';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KoaInstrumentation, KoaLayerType } from '@opentelemetry/instrumentation-koa';
import { GraphQLInstrumentation } from '@opentelemetry/instrumentation-graphql';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { KnexInstrumentation } from '@opentelemetry/instrumentation-knex';
import type { Tracer } from '@opentelemetry/api';
import { markTracingOn } from './tracing.js';

/** Probes and scrapes: no trace (a load balancer's probe every few seconds would drown the real ones). */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export interface Tracing {
  /** Exports what is still buffered and stops the SDK (at shutdown). */
  shutdown(): Promise<void>;
}

/**
 * `database`: which driver carries the ORM's statements. On PostgreSQL the pg instrumentation sees every
 * statement (the ORM's, through knex, and the plain-SQL writer's), so knex is not instrumented there: one span per
 * statement, not a knex span with the same statement's pg span inside it. SQLite's driver has no instrumentation:
 * knex's spans carry the ORM's statements, src/db's own the rest.
 */
export async function startTracing({ database }: { database: 'sqlite' | 'postgresql' }): Promise<Tracing> {
  // The same import-in-the-middle instance as @opentelemetry/instrumentation's, so its hooks reach this loader.
  const fromInstrumentation = createRequire(createRequire(import.meta.url).resolve('@opentelemetry/instrumentation'));
  const iitm = fromInstrumentation('import-in-the-middle') as typeof import('import-in-the-middle');
  const { registerOptions, waitForAllMessagesAcknowledged } = iitm.createAddHookMessageChannel();
  register(fromInstrumentation.resolve('import-in-the-middle/hook.mjs'), import.meta.url, registerOptions);

  const sdk = new NodeSDK({
    ...(process.env.OTEL_SERVICE_NAME ? {} : { serviceName: 'petstore' }),
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        // No request or response header becomes an attribute (X-API-Key, Authorization, Idempotency-Key):
        // headersToSpanAttributes stays unset, and bodies are never read.
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]!),
        // An outgoing request (a webhook) is recorded by its origin: a receiver's path or query may hold a token.
        requestHook: (span, request) => {
          if (!(request instanceof ClientRequest)) return;
          const origin = `${request.protocol}//${request.host}`;
          span.setAttributes({ 'http.url': `${origin}/…`, 'url.full': `${origin}/…`, 'http.target': '/…', 'url.path': '/…' });
        },
      }),
      // Spans for the router's layers only (named by the route template); the middleware are not spans.
      new KoaInstrumentation({ ignoreLayersType: [KoaLayerType.MIDDLEWARE] }),
      // The operation, its parse and validation, resolvers merged by list item; trivial resolvers (a
      // field read) skipped; literal values in the document replaced (allowValues off), variables never recorded.
      new GraphQLInstrumentation({ mergeItems: true, ignoreTrivialResolveSpans: true, allowValues: false }),
      // SQL spans only inside a trace: the event workers' polls outside any request would be a trace each.
      new PgInstrumentation({
        requireParentSpan: true,
        enhancedDatabaseReporting: false,
        // The writer sends its last statements with the COMMIT as literals (src/db/writer.ts): the span
        // keeps the statement's text, not the values.
        requestHook: (span, { query }) => {
          if (!query.values?.length && /['\d]/.test(query.text)) span.setAttribute('db.query.text', withoutLiterals(query.text));
        },
      }),
      ...(database === 'sqlite' ? [new StatementTextOnlyKnexInstrumentation({ requireParentSpan: true, maxQueryLength: 2000 })] : []),
    ],
  });
  sdk.start();
  await waitForAllMessagesAcknowledged();
  markTracingOn();
  return { shutdown: () => sdk.shutdown() };
}

/**
 * The ORM's statements (through knex). MikroORM hands knex its SQL with the values already inlined, so
 * `db.query.text` would hold them (a key's hash, a webhook secret): the text is recorded without its literals.
 */
class StatementTextOnlyKnexInstrumentation extends KnexInstrumentation {
  protected override get tracer(): Tracer {
    const tracer = super.tracer;
    return {
      startSpan: (name, options, ctx) => {
        const text = options?.attributes?.['db.query.text'];
        const attributes =
          typeof text === 'string' ? { ...options!.attributes, 'db.query.text': withoutLiterals(text) } : options?.attributes;
        return tracer.startSpan(name, { ...options, attributes }, ctx);
      },
      startActiveSpan: tracer.startActiveSpan.bind(tracer),
    };
  }
}

/** SQL with its string and number literals replaced by `?`. */
export function withoutLiterals(sql: string): string {
  return sql.replace(/\bE'(?:[^'\\]|\\.|'')*'|'(?:[^']|'')*'/g, '?').replace(/(?<![\w$.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?\b/gi, '?');
}
