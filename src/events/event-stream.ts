/**
 * The outbox as a stream, for GraphQL subscriptions. While anyone listens, the instance reads the
 * `events` table after the last id it has seen: at once when something commits in this process (or,
 * on PostgreSQL, when another instance announces its commits), and otherwise every `pollMs`, doubling while
 * nothing comes up to `pollMaxMs` (for other processes' writes on SQLite; src/events/work-loop.ts).
 * Nobody listening, it reads nothing. It reads in the outbox's read order from the last position it
 * reached (see recordEvent: on PostgreSQL only events whose transaction is below every snapshot's
 * horizon), so it misses nothing that commits late, and every instance reads the same shared table, so
 * an event committed on one instance reaches subscribers on all of them.
 */
import type { Logger } from 'pino';
import type { Orm } from '../db/orm.js';
import { EventsService, type EventSubscriptions } from '../domain/events.service.js';
import type { EventView } from '../domain/views.js';
import { OUTBOX_START, type EventPosition } from '../domain/event-position.js';
import { readerFork } from './commit-signal.js';
import { WorkLoop, type RunResult } from './work-loop.js';
import { linksTo, SpanKind, tracer, tracingOn } from '../observability/tracing.js';

const BATCH = 200;
/**
 * Woken reads start at least this far apart: every commit in this process wakes it (and on PostgreSQL
 * every instance's announcement), and under load a read per event would cost each order a query more; one read picks up
 * everything committed before it.
 */
const WAKE_GAP_MS = 10;

/** The push of one event to this instance's subscriptions as a span of its own, linked to the change that wrote the event. */
function pushTraced(event: EventView, position: EventPosition, listeners: Array<(event: EventView, position: EventPosition) => void>) {
  const attributes = { 'petstore.event.id': event.id, 'petstore.event.type': event.type, 'petstore.subscriptions': listeners.length };
  const span = tracer().startSpan('subscription push', {
    root: true,
    kind: SpanKind.PRODUCER,
    attributes,
    links: linksTo(event.traceparent),
  });
  try {
    for (const listener of listeners) listener(event, position);
  } finally {
    span.end();
  }
}

export class EventStream implements EventSubscriptions {
  private readonly listeners = new Set<(event: EventView, position: EventPosition) => void>();
  private position: EventPosition = OUTBOX_START;
  /** Set while the loop runs: resolves once the starting position is known. */
  private started: Promise<void> | null = null;
  private closed = false;
  private readonly loop: WorkLoop;

  constructor(
    private readonly orm: Orm,
    private readonly logger: Logger,
    pollMs: number,
    pollMaxMs = pollMs,
    readonly backlogMax = 1000,
  ) {
    this.loop = new WorkLoop(
      () => this.poll(),
      { minMs: pollMs, maxMs: pollMaxMs, wakeGapMs: WAKE_GAP_MS },
      (err) => this.logger.warn({ err }, 'events: reading the outbox for subscriptions failed; retrying'),
    );
  }

  async subscribe(listener: (event: EventView, position: EventPosition) => void): Promise<() => void> {
    if (this.closed) throw new Error('The event stream is closed.');
    this.listeners.add(listener);
    // The first listener starts the loop after the newest event: a subscription gets what commits from now on.
    this.started ??= new EventsService(readerFork(this.orm)).newestPosition().then((position) => {
      this.position = position;
      this.loop.start();
    });
    try {
      await this.started;
    } catch (error) {
      this.started = null;
      this.listeners.delete(listener);
      throw error;
    }
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Stops reading; listeners get nothing more. */
  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    await this.loop.stop();
  }

  /** Reads now rather than at the next poll (an event committed somewhere); a no-op while nobody listens. */
  wake(): void {
    if (!this.closed) this.loop.wake();
  }

  /** One read of everything new; nobody listening, the loop stops until the next first listener. */
  private async poll(): Promise<RunResult> {
    if (this.listeners.size === 0) {
      this.loop.pause();
      this.started = null;
      return { found: false };
    }
    let found = false;
    let held = false;
    try {
      const service = new EventsService(readerFork(this.orm));
      for (let more = true; more && this.listeners.size > 0; ) {
        const { events, positions, next, waiting } = await service.eventsAfter(this.position, BATCH);
        this.position = next;
        // Committed events behind an older transaction still running: look again soon (its end may notify nobody).
        held = waiting;
        events.forEach((event, n) => {
          if (tracingOn()) pushTraced(event, positions[n]!, [...this.listeners]);
          else for (const listener of [...this.listeners]) listener(event, positions[n]!);
        });
        found ||= events.length > 0;
        more = events.length === BATCH;
      }
    } catch (err) {
      this.logger.warn({ err }, 'events: reading the outbox for subscriptions failed; retrying');
    }
    return { found, held };
  }
}
