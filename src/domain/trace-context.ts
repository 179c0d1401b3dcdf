import { context, propagation } from '@opentelemetry/api';

/**
 * The W3C `traceparent` of the active span, stored with an event so that what delivers it later can link
 * to the change that wrote it; null outside a trace. Without an OpenTelemetry SDK (tracing off) the API's
 * propagator is a no-op and this is always null.
 */
export function currentTraceparent(): string | null {
  const carrier: { traceparent?: string } = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}
