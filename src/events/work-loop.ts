/**
 * How the outbox's readers (the webhook worker, the subscription feed) decide when to look for work:
 * woken at once by a commit (this process's, or on PostgreSQL another instance's announcement), and otherwise
 * polling for what other processes wrote, from `minMs` after work was found, doubling while none is,
 * up to `maxMs`, so an idle service reads nothing for seconds at a time. Runs never overlap; a wake
 * during a run runs once more right after it, and woken runs start at least `wakeGapMs` apart (under
 * load one run picks up every commit before it, instead of one run per commit).
 */
export interface LoopTimes {
  minMs: number;
  maxMs: number;
  wakeGapMs: number;
  /** False: runs only when woken (no poll); `minMs` and `maxMs` are then unused. Default true. */
  poll?: boolean;
}

/** What one run found: whether there was work (the poll interval starts over), and when known work falls due. */
export interface RunResult {
  found: boolean;
  /** Epoch ms at which something is due (a scheduled retry): the next run starts by then at the latest. */
  dueAt?: number | null;
  /**
   * Work known to be there but not readable yet (PostgreSQL: events committed behind an older transaction still
   * running, whose end may notify nobody): the next run comes after `HELD_RETRY_MS` (or the wake gap, if longer),
   * whatever the poll interval.
   */
  held?: boolean;
}

/**
 * How soon a run that found work held behind an older transaction runs again: such a transaction usually ends within
 * milliseconds, and one that runs long is read for at most 20 times a second.
 */
export const HELD_RETRY_MS = 50;

export class WorkLoop {
  private timer: NodeJS.Timeout | undefined;
  private interval: number;
  private running: Promise<void> | null = null;
  private again = false;
  private active = false;
  private stopped = false;
  private lastStart = -Infinity;

  constructor(
    private readonly run: () => Promise<RunResult>,
    private readonly times: LoopTimes,
    private readonly onError: (err: unknown) => void,
  ) {
    this.interval = times.minMs;
  }

  /** Starts polling (the first run after `minMs`); `now` runs at once. */
  start(now = false): void {
    if (this.stopped || this.active) return;
    this.active = true;
    this.interval = this.times.minMs;
    if (now) this.schedule(0);
    else if (this.times.poll !== false) this.schedule(this.times.minMs);
  }

  /** Stops polling until the next start (a run under way finishes). */
  pause(): void {
    this.active = false;
    clearTimeout(this.timer);
  }

  /** Something committed: run soon rather than at the next poll. */
  wake(): void {
    if (!this.active) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(Math.max(0, this.lastStart + this.times.wakeGapMs - performance.now()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.pause();
    await this.running;
  }

  private schedule(delay: number) {
    if (this.stopped || !this.active) return;
    this.timer = setTimeout(() => void this.execute(), delay);
  }

  private execute(): Promise<void> {
    this.lastStart = performance.now();
    this.again = false;
    this.running = this.run().then(
      (result) => this.next(result),
      (err: unknown) => {
        this.onError(err);
        this.next({ found: true });
      },
    );
    return this.running;
  }

  /** After a run, in one step (a wake between two steps would be lost): when the next one starts. */
  private next(result: RunResult) {
    this.running = null;
    this.interval = result.found ? this.times.minMs : Math.min(this.interval * 2, this.times.maxMs);
    let delay = this.again ? Math.max(0, this.lastStart + this.times.wakeGapMs - performance.now()) : this.interval;
    if (result.dueAt !== null && result.dueAt !== undefined) delay = Math.min(delay, Math.max(0, result.dueAt - Date.now()));
    if (result.held) delay = Math.min(delay, Math.max(HELD_RETRY_MS, this.times.wakeGapMs));
    clearTimeout(this.timer);
    const woken = this.again || result.held || (result.dueAt !== null && result.dueAt !== undefined);
    if (this.times.poll !== false || woken) this.schedule(delay);
  }
}
