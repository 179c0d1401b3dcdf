import { createHash } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { IdempotencyRecord } from './entities/index.js';
import { DomainError, ReplayedDomainError, validationFailed, type DomainErrorCode, type ErrorDetail } from './errors.js';

export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;
/** A record still in flight after this long belongs to a request that died; a retry may take it over. */
export const IDEMPOTENCY_ABANDONED_MS = 60 * 1000;

type StoredOutcome<T> = { ok: true; value: T } | { ok: false; code: DomainErrorCode; message: string; details?: ErrorDetail[] };

/**
 * Idempotency keys (SPEC §8), stored in the database so every instance sees them. The first request
 * claims the key with a unique insert (the database decides races between instances), runs, and
 * stores its outcome; later requests with the same key and payload replay it.
 */
export class IdempotencyService {
  constructor(private readonly em: EntityManager) {}

  static validateKey(key: unknown): string {
    if (typeof key !== 'string' || key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
      throw validationFailed('The idempotency key must be 1 to 255 visible ASCII characters.', [
        { path: 'idempotencyKey', message: '1..255 visible ASCII characters' },
      ]);
    }
    return key;
  }

  async run<T>(accountId: number, rawKey: string, payload: unknown, execute: () => Promise<T>): Promise<{ value: T; replayed: boolean }> {
    const key = IdempotencyService.validateKey(rawKey);
    const requestHash = createHash('sha256').update(JSON.stringify(payload)).digest('hex');
    // Records are kept 24 hours: each new claim drops the account's expired ones (one indexed delete),
    // so the table stays bounded by what accounts used in the last day, with no timer to run.
    await this.em.nativeDelete(IdempotencyRecord, { account: accountId, expiresAt: { $lte: new Date() } });
    const recordId = await this.claim(accountId, key, requestHash);
    if (typeof recordId !== 'number') return { value: this.replay(recordId), replayed: true };
    let value: T;
    try {
      value = await execute();
    } catch (error) {
      if (error instanceof DomainError) {
        await this.store(recordId, { ok: false, code: error.code, message: error.message, details: error.details });
      } else {
        // Unexpected failure: forget the key so that the client's retry runs again.
        await this.em.nativeDelete(IdempotencyRecord, { id: recordId });
      }
      throw error;
    }
    await this.store(recordId, { ok: true, value });
    return { value, replayed: false };
  }

  /** Returns the new record's id, or the stored outcome of an earlier request with this key. */
  private async claim(accountId: number, key: string, requestHash: string, attempt = 0): Promise<number | StoredOutcome<unknown>> {
    const now = new Date();
    try {
      return Number(
        await this.em.insert(IdempotencyRecord, {
          account: accountId,
          key,
          requestHash,
          outcome: null,
          createdAt: now,
          expiresAt: new Date(now.getTime() + IDEMPOTENCY_KEY_TTL_MS),
        }),
      );
    } catch (error) {
      if (!(error instanceof UniqueConstraintViolationException)) throw error;
    }
    const existing = await this.em.fork().findOne(IdempotencyRecord, { account: accountId, key });
    if (!existing) {
      if (attempt < 2) return this.claim(accountId, key, requestHash, attempt + 1);
      throw new DomainError('IDEMPOTENCY_KEY_IN_FLIGHT', 'A request with this idempotency key is in flight; retry shortly.');
    }
    const expired = existing.expiresAt.getTime() <= now.getTime();
    const abandoned = existing.outcome === null && existing.createdAt.getTime() <= now.getTime() - IDEMPOTENCY_ABANDONED_MS;
    if ((expired || abandoned) && attempt < 2) {
      await this.em.nativeDelete(IdempotencyRecord, { id: existing.id, createdAt: existing.createdAt });
      return this.claim(accountId, key, requestHash, attempt + 1);
    }
    if (existing.requestHash !== requestHash) {
      throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was used with a different request; use a new key.');
    }
    if (existing.outcome === null) {
      throw new DomainError('IDEMPOTENCY_KEY_IN_FLIGHT', 'A request with this idempotency key is still in flight; retry shortly.');
    }
    return JSON.parse(existing.outcome) as StoredOutcome<unknown>;
  }

  private replay<T>(outcome: StoredOutcome<unknown>): T {
    if (outcome.ok) return outcome.value as T;
    throw new ReplayedDomainError(outcome.code, outcome.message, outcome.details);
  }

  private async store(recordId: number, outcome: StoredOutcome<unknown>) {
    await this.em.nativeUpdate(IdempotencyRecord, { id: recordId }, { outcome: JSON.stringify(outcome) });
  }

}
