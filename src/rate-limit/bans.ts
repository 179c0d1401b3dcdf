import type { RateLimiterRes } from 'rate-limiter-flexible';
import type { BanRegistry } from '../domain/index.js';
import type { Counter, LimiterStore } from './store.js';
import { secondsUntil } from './headers.js';

/**
 * How long this process trusts its own memory of a ban before asking the store again: a banned key
 * costs the store at most one read per second per instance, and a ban lifted on another instance
 * applies here within that time (the same bound as the authentication cache).
 */
const RECHECK_MS = 1000;
const LOCAL_LIMIT = 10_000;

/**
 * Bans belong to the key (docs/RATE-LIMITS.md, "Bans"). Refusals are counted per key in a counter that expires with the
 * window that refused them, so a client that waits `Retry-After` collects at most one refusal per
 * window and is never banned; one that sends more than `threshold` while limited is banned for
 * `banSeconds`, in the shared store (every instance refuses it) and in this process's memory (a
 * banned key does not touch the store). The gate also records the ban on the key in the database
 * (`GateOptions.recordBan`), the copy that outlives the store.
 */
export class KeyBans implements BanRegistry {
  private readonly banned: Counter;
  private readonly refusals: Counter;
  /** Bans this process knows of (with a shared store, a cache of it: emptied when full, the store still answers). */
  private readonly local = new Map<number, { until: number; checkedAt: number }>();
  /**
   * Whether other instances share the store (Redis) and may ban a key there. With the memory store
   * only this process bans, and every ban it makes is in `local` until it ends or is lifted: this
   * memory is the whole truth, and a request costs no store read for its ban.
   */
  readonly shared: boolean;

  constructor(
    store: LimiterStore,
    private readonly threshold: number,
    private readonly banSeconds: number,
    refusalWindowSeconds: number,
  ) {
    this.shared = store.kind !== 'memory';
    this.banned = store.counter({ name: 'ban', points: 1, duration: banSeconds });
    this.refusals = store.counter({ name: 'refused', points: threshold, duration: refusalWindowSeconds });
  }

  /** The ban's end as this process remembers it, or null when it must ask the store (or there is none). */
  remembered(keyId: number, now = Date.now()): number | null {
    const entry = this.local.get(keyId);
    if (!entry) return null;
    if (entry.until <= now) {
      this.local.delete(keyId);
      return null;
    }
    return !this.shared || now - entry.checkedAt < RECHECK_MS ? entry.until : null;
  }

  /**
   * For a key `remembered` found no ban for: its ban in the shared store, or null at once when the
   * store is this process's own (nothing to ask).
   */
  check(keyId: number): Promise<number | null> | null {
    return this.shared ? this.lookup(keyId) : null;
  }

  /** The ban's end (epoch ms) from the store, or null; remembered locally either way. */
  async lookup(keyId: number): Promise<number | null> {
    const res = await this.banned.get(String(keyId));
    const now = Date.now();
    const until = isActive(res) ? now + res!.msBeforeNext : null;
    if (until) this.remember(keyId, until, now);
    else this.local.delete(keyId);
    return until;
  }

  /**
   * Counts a refused request; returns the ban's end when this refusal crossed the threshold.
   * `windowResetAt` is when the refusing window resets: the count lives exactly that long.
   */
  async refused(keyId: number, windowResetAt: number): Promise<number | null> {
    const res = await this.refusals.penalty(String(keyId), 1, { customDuration: secondsUntil(windowResetAt) });
    if (res.consumedPoints <= this.threshold) return null;
    await this.banned.block(String(keyId), this.banSeconds);
    await this.refusals.delete(String(keyId));
    const until = Date.now() + this.banSeconds * 1000;
    this.remember(keyId, until);
    return until;
  }

  async bannedUntil(keyId: number): Promise<Date | null> {
    const until = await this.lookup(keyId);
    return until ? new Date(until) : null;
  }

  async lift(keyId: number): Promise<void> {
    this.local.delete(keyId);
    await this.banned.delete(String(keyId));
    await this.refusals.delete(String(keyId));
  }

  private remember(keyId: number, until: number, now = Date.now()) {
    if (this.local.size >= LOCAL_LIMIT) {
      for (const [id, e] of this.local) if (e.until <= now) this.local.delete(id);
      // Forgetting is safe only where the shared store still answers; a process's own bans are kept.
      if (this.shared && this.local.size >= LOCAL_LIMIT) this.local.clear();
    }
    this.local.set(keyId, { until, checkedAt: now });
  }
}

/** `block` stores points + 1 with the ban's lifetime; a key without an entry is not banned. */
const isActive = (res: RateLimiterRes | null) => Boolean(res && res.consumedPoints > 0 && res.msBeforeNext > 0);
