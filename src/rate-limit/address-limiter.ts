import { LRUCache } from 'lru-cache';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

interface Failures {
  used: number;
  /** Epoch ms at which this address's window resets. */
  resetAt: number;
}

/**
 * Failed authentications per client address (docs/RATE-LIMITS.md, "Without a valid key"), in this process's memory: a fixed window per
 * address, at most `maxAddresses` addresses tracked (the least recently seen is dropped first), so its
 * memory is bounded whatever the traffic. IPv6 addresses count per /64. Per instance on purpose: it
 * needs no store round trip, keeps working when Redis does not, and guessing a 192-bit key stays
 * pointless at N instances × the limit per minute (docs/DECISIONS.md).
 */
export class AddressLimiter {
  private readonly entries: LRUCache<string, Failures>;

  constructor(
    readonly limit: number,
    private readonly windowMs: number,
    maxAddresses: number,
  ) {
    this.entries = new LRUCache<string, Failures>({ max: maxAddresses });
  }

  /** How many addresses are tracked right now (never more than `maxAddresses`). */
  get size(): number {
    return this.entries.size;
  }

  /** This window's failures of the address, without counting one. */
  peek(address: string, now = Date.now()): Failures {
    const entry = this.entries.peek(addressBucket(address));
    return entry && entry.resetAt > now ? entry : { used: 0, resetAt: now + this.windowMs };
  }

  /** Counts one failure; returns the window after it (over the limit when `used > limit`). */
  fail(address: string, now = Date.now()): Failures {
    const key = addressBucket(address);
    const live = this.peek(address, now);
    const entry = { used: live.used + 1, resetAt: live.resetAt };
    this.entries.set(key, entry);
    return entry;
  }

  /** True when the address has no failure left in this window: its next unknown key is refused. */
  exhausted(address: string, now = Date.now()): boolean {
    return this.peek(address, now).used >= this.limit;
  }
}

/**
 * The key the per-address limiter counts under: the address itself, but a whole IPv6 /64 as one
 * (one subscriber usually holds a /64, and would otherwise have 2^64 fresh addresses to rotate through).
 */
export function addressBucket(address: string): string {
  if (isIP(address) !== 6) return address;
  const parts = ipaddr.IPv6.parse(address).parts.slice(0, 4);
  return `${parts.map((p) => p.toString(16)).join(':')}::/64`;
}
