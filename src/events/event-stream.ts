/**
 * The outbox as a stream, for GraphQL subscriptions. While anyone listens, the instance reads the
 * `events` table after the last id it has seen, every `pollMs`; ids are assigned in commit order
 * (see recordEvent), so reading by id misses nothing that committed, and every instance reads the
 * same shared table, so an event committed on one instance reaches subscribers on all of them.
 */
import type { Logger } from 'pino';
import type { Orm } from '../db/orm.js';
import { EventsService, type EventSubscriptions } from '../domain/events.service.js';
import type { EventView } from '../domain/views.js';

const BATCH = 200;
/**
 * Woken reads start at least this far apart: on PostgreSQL every committed event wakes every instance
 * (NOTIFY), and under load a read per event would cost each order a query more; one read picks up
 * everything committed before it.
 */
const WAKE_GAP_MS = 10;

export class EventStream implements EventSubscriptions {
  private readonly listeners = new Set<(event: EventView) => void>();
  private lastId = 0;
  /** Set while the loop runs: resolves once the starting position is known. */
  private started: Promise<void> | null = null;
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly orm: Orm,
    private readonly logger: Logger,
    private readonly pollMs: number,
  ) {}

  async subscribe(listener: (event: EventView) => void): Promise<() => void> {
    if (this.closed) throw new Error('The event stream is closed.');
    this.listeners.add(listener);
    // The first listener starts the loop after the newest event: a subscription gets what commits from now on.
    this.started ??= new EventsService(this.orm.em.fork()).lastEventId().then((id) => {
      this.lastId = id;
      this.schedule();
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
    clearTimeout(this.timer);
    this.listeners.clear();
    await this.polling;
  }

  /** Reads now rather than at the next poll (an event committed somewhere); a no-op while nobody listens. */
  wake(): void {
    if (this.closed || !this.started) return;
    // Mid-read, the read may already be past the new event's commit: read once more right after.
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(Math.max(0, this.lastReadAt + WAKE_GAP_MS - performance.now()));
  }

  private reading = false;
  private readAgain = false;
  private lastReadAt = 0;

  private schedule(delay = this.pollMs) {
    if (this.closed) return;
    this.timer = setTimeout(() => {
      this.lastReadAt = performance.now();
      this.reading = true;
      this.readAgain = false;
      this.polling = this.poll().then((more) => {
        this.reading = false;
        if (more) this.schedule(this.readAgain ? WAKE_GAP_MS : this.pollMs);
      });
    }, delay);
  }

  /** One read; false when nobody listens any more (the loop then stops until the next first listener). */
  private async poll(): Promise<boolean> {
    if (this.listeners.size === 0) {
      this.started = null;
      return false;
    }
    try {
      const service = new EventsService(this.orm.em.fork());
      for (let more = true; more && this.listeners.size > 0; ) {
        const events = await service.eventsAfter(this.lastId, BATCH);
        for (const event of events) {
          this.lastId = event.id;
          for (const listener of [...this.listeners]) listener(event);
        }
        more = events.length === BATCH;
      }
    } catch (err) {
      this.logger.warn({ err }, 'events: reading the outbox for subscriptions failed; retrying');
    }
    return true;
  }
}
