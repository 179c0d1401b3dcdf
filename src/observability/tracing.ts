/**
 * OpenTelemetry traces, seen from the app's code. Only `@opentelemetry/api` is imported here: without a
 * registered SDK (tracing off, the default) it is a no-op, and every caller first checks `tracingOn()`,
 * a boolean, so the hot path pays one branch. The SDK itself is loaded by src/observability/otel-sdk.ts,
 * from src/main.ts, only when the standard `OTEL_*` variables ask for traces (docs/OPERATIONS.md, "Traces").
 */
import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Link, type Span } from '@opentelemetry/api';

export { SpanKind, SpanStatusCode, type Span };

let on = false;

/** Whether the SDK runs in this process (set by otel-sdk.ts once it has started). */
export const tracingOn = (): boolean => on;
export const markTracingOn = (): void => {
  on = true;
};

/**
 * Whether the standard variables ask for traces: an OTLP endpoint (all signals or traces), or
 * `OTEL_TRACES_EXPORTER` naming an exporter; `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` win.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.includes('none')) return false;
  if (exporters.length) return true;
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

export const tracer = () => trace.getTracer('petstore');

/** The active span, if tracing is on and one is recording. */
export function activeSpan(): Span | undefined {
  if (!on) return undefined;
  const span = trace.getActiveSpan();
  return span?.isRecording() ? span : undefined;
}

/** The W3C `traceparent` of the active span (to store with an event), or null. */
export function currentTraceparent(): string | null {
  if (!on) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
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
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, links: options.links, root: options.root }, async (span) => {
    try {
      return await work(span);
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.name ?? 'error' });
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * One SQLite statement (synchronous: libsql) as a span: `db.query.text` is the text as prepared, with
 * placeholders, never the values. libsql has no OpenTelemetry instrumentation of its own.
 */
export function sqliteSpan<T>(sql: string, work: () => T): T {
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
