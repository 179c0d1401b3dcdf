/**
 * OpenTelemetry traces, seen from the app's code. Only `@opentelemetry/api` is imported here: without a
 * registered SDK (tracing off, the default) it is a no-op, and every caller first checks `tracingOn()`,
 * a boolean, so the hot path pays one branch. The SDK itself is loaded by src/observability/otel-sdk.ts,
 * from src/main.ts, only when the standard `OTEL_*` variables ask for traces (`Config.traces`; docs/OPERATIONS.md, "Traces").
 */
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Link,
  type Span,
} from '@opentelemetry/api';

export { SpanKind, SpanStatusCode, type Span };

let on = false;

/** Whether the SDK runs in this process (set by otel-sdk.ts once it has started). */
export const tracingOn = (): boolean => on;
export const markTracingOn = (): void => {
  on = true;
};

export const tracer = () => trace.getTracer('petstore');

/** The active span, if tracing is on and one is recording. */
export function activeSpan(): Span | undefined {
  if (!on) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/** `headers` with the active span's `traceparent` (and `tracestate`) added, for an outgoing request. */
export function traceHeaders(headers: Record<string, string>): Record<string, string> {
  const out = { ...headers };
  propagation.inject(context.active(), out);
  return out;
}

/** A link to the span a stored `traceparent` names (none if it is absent or not valid). */
export function linksTo(traceparent: string | null | undefined): Link[] {
  if (!traceparent) return [];
  const spanContext = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
  return spanContext && trace.isSpanContextValid(spanContext) ? [{ context: spanContext }] : [];
}

/**
 * Runs `work` in a new span (a child of the active one, or a new trace with `root`), ended when it
 * settles; a throw marks it as an error (the exception's type only: its message may quote input).
 * Callers check `tracingOn()` first and call `work` directly when it is off.
 */
export async function inSpan<T>(
  name: string,
  options: { kind?: SpanKind; attributes?: Attributes; links?: Link[]; root?: boolean },
  work: (span: Span) => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, links: options.links, root: options.root },
    async (span) => {
      try {
        return await work(span);
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.name ?? 'error' });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/**
 * One SQLite statement (synchronous: libsql) as a span: `db.query.text` is the text as prepared, with
 * placeholders, never the values. libsql has no OpenTelemetry instrumentation of its own.
 */
export function sqliteSpan<T>(sql: string, work: () => T): T {
  // Only inside a trace, as the pg and knex instrumentations are configured: a worker's poll is no trace of its own.
  if (!trace.getActiveSpan()) return work();
  const operation = sql.trimStart().split(/\s/, 1)[0]!.toLowerCase();
  const attributes = { 'db.system.name': 'sqlite', 'db.query.text': sql, 'db.operation.name': operation };
  return tracer().startActiveSpan(`sqlite ${operation}`, { kind: SpanKind.CLIENT, attributes }, (span) => {
    try {
      return work();
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.name ?? 'error' });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The `trace_id` and `span_id` of a span, for the request's log line. */
export function logIds(span: Span | undefined): { trace_id: string; span_id: string } | undefined {
  if (!span) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
