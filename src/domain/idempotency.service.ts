import { createHash } from 'node:crypto';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { IdempotencyRecord } from './entities/index.js';
import { DomainError, ReplayedDomainError, validationFailed, type DomainErrorCode, type ErrorDetail, type ErrorSubject } from './errors.js';
import type { SqlReader } from './reader.js';
import { timeOf } from './rows.js';
import type { SqlTransaction, SqlWriter } from './writer.js';

export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * A record still without an outcome after this long belongs to a request that died (a crash, a kill,
 * a shutdown that cut it off); a retry takes it over. The app passes the request timeout.
 */
export const DEFAULT_IDEMPOTENCY_CLAIM_MS = 60 * 1000;

type StoredOutcome<T> =
  | { ok: true; value: T }
  | { ok: false; code: DomainErrorCode; message: string; details?: ErrorDetail[]; subject?: ErrorSubject };

/** How many expired records one delete of the periodic purge drops at most (short statements, short locks). */
export const IDEMPOTENCY_PURGE_BATCH = 500;

/**
 * Drops every account's expired idempotency records, in batches of `batchSize`; returns how many went. The
 * outbox's upkeep runs it on every instance (src/events/outbox-upkeep.ts), so an account that stops ordering
 * leaves nothing behind past the retention. Each batch is a select of at most `batchSize` ids and a delete of
 * those (short statements, short locks). There is no index on `expires_at` for every order to write: the
 * select reads in id order, where the oldest, expired records come first; the table holds one day of keys.
 */
export async function purgeExpiredIdempotencyRecords(
  em: EntityManager,
  now = new Date(),
  batchSize = IDEMPOTENCY_PURGE_BATCH,
): Promise<number> {
  let purged = 0;
  for (;;) {
    const batch = await em.find(
      IdempotencyRecord,
      { expiresAt: { $lte: now } },
      { orderBy: { id: 'asc' }, limit: batchSize, fields: ['id'] },
    );
    if (!batch.length) return purged;
    purged += await em.nativeDelete(IdempotencyRecord, { id: { $in: batch.map((r) => r.id) } });
    em.clear();
    if (batch.length < batchSize) return purged;
  }
}

/**
 * Idempotency keys (docs/API.md, "Idempotency keys"), stored in the database so every instance sees them. The first request
 * claims the key with a unique insert (the database decides races between instances; a second request
 * meanwhile gets 409 IN_FLIGHT). Its work and its outcome then commit in **one** transaction, and the
 * outcome is written only while the claim is still the same open record: a crash before the commit
 * leaves no order and an open claim, which a retry takes over once it is older than `claimMs`; a crash
 * after it leaves the order and its outcome, which a retry replays. The same key never places twice,
 * even when a request outlives its claim (its commit finds the claim taken over and rolls back).
 * Plain SQL through the writer (src/domain/writer.ts): the order's transaction is the writer's.
 */
export class IdempotencyService {
  constructor(
    private readonly writer: SqlWriter,
    private readonly reader: SqlReader,
    private readonly claimMs = DEFAULT_IDEMPOTENCY_CLAIM_MS,
  ) {}

  static validateKey(key: unknown): string {
    if (typeof key !== 'string' || key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
      throw validationFailed('The idempotency key must be 1 to 255 visible ASCII characters.', [
        { path: 'idempotencyKey', message: '1..255 visible ASCII characters' },
      ]);
    }
    return key;
  }

  /** Runs `execute` once per key: inside the transaction that also stores its outcome. */
  async run<T>(
    accountId: number,
    rawKey: string,
    payload: unknown,
    execute: (tx: SqlTransaction) => Promise<T>,
  ): Promise<{ value: T; replayed: boolean }> {
    const key = IdempotencyService.validateKey(rawKey);
    const requestHash = createHash('sha256').update(JSON.stringify(payload)).digest('hex');
    const recordId = await this.claim(accountId, key, requestHash);
    if (typeof recordId !== 'number') return { value: this.replay(recordId), replayed: true };
    let value: T;
    try {
      value = await this.writer.transaction(async (tx) => {
        const result = await execute(tx);
        await this.store(tx, recordId, { ok: true, value: result });
        return result;
      });
    } catch (error) {
      if (error instanceof DomainError && !(error instanceof LostClaim)) {
        // A refusal (no stock, …) changed nothing; it is the key's outcome too.
        const outcome: StoredOutcome<unknown> = {
          ok: false,
          code: error.code,
          message: error.message,
          details: error.details,
          subject: error.subject,
        };
        await this.writer.transaction((tx) => this.store(tx, recordId, outcome)).catch(() => undefined);
      } else if (!(error instanceof LostClaim)) {
        // Unexpected failure: forget the key so that the client's retry runs again (if this fails too,
        // the claim frees itself after claimMs).
        await this.statement('delete from idempotency_records where id = ? and outcome is null', [recordId]).catch(() => undefined);
      }
      throw error;
    }
    return { value, replayed: false };
  }

  /** One write in a transaction of its own. */
  private statement(sql: string, params: readonly unknown[]): Promise<number> {
    return this.writer.transaction((tx) => tx.run(sql, params));
  }

  /** Returns the new record's id, or the stored outcome of an earlier request with this key. */
  private async claim(accountId: number, key: string, requestHash: string, attempt = 0): Promise<number | StoredOutcome<unknown>> {
    const now = new Date();
    try {
      const [row] = await this.writer.transaction(async (tx) => {
        // Records are kept 24 hours: each new claim drops the account's expired ones (one indexed delete, in the
        // claim's transaction); the upkeep's purge drops every account's (purgeExpiredIdempotencyRecords).
        if (attempt === 0) await tx.run('delete from idempotency_records where account_id = ? and expires_at <= ?', [accountId, now]);
        return tx.all<{ id: number | string }>(
          'insert into idempotency_records (account_id, key, request_hash, outcome, created_at, expires_at) values (?, ?, ?, null, ?, ?) returning id',
          [accountId, key, requestHash, now, new Date(now.getTime() + IDEMPOTENCY_KEY_TTL_MS)],
        );
      });
      return Number(row!.id);
    } catch (error) {
      if (!(error instanceof UniqueConstraintViolationException)) throw error;
    }
    // Committed rows only (the reader), as the ORM's fork read them before.
    const existing = await this.reader.one<RecordRow>(
      'select id, request_hash, outcome, created_at, expires_at from idempotency_records where account_id = ? and key = ?',
      [accountId, key],
    );
    if (!existing) {
      if (attempt < 2) return this.claim(accountId, key, requestHash, attempt + 1);
      throw new DomainError('IDEMPOTENCY_KEY_IN_FLIGHT', 'A request with this idempotency key is in flight; retry shortly.');
    }
    const expired = timeOf(existing.expires_at) <= now.getTime();
    const abandoned = existing.outcome === null && timeOf(existing.created_at) <= now.getTime() - this.claimMs;
    if ((expired || abandoned) && attempt < 2) {
      // Only the record as read: an outcome committed meanwhile is replayed, not deleted.
      await this.statement(`delete from idempotency_records where id = ?${expired ? '' : ' and outcome is null'}`, [existing.id]);
      return this.claim(accountId, key, requestHash, attempt + 1);
    }
    if (existing.request_hash !== requestHash) {
      throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'This idempotency key was used with a different request; use a new key.');
    }
    if (existing.outcome === null) {
      throw new DomainError('IDEMPOTENCY_KEY_IN_FLIGHT', 'A request with this idempotency key is still in flight; retry shortly.');
    }
    return JSON.parse(existing.outcome) as StoredOutcome<unknown>;
  }

  private replay<T>(outcome: StoredOutcome<unknown>): T {
    if (outcome.ok) return outcome.value as T;
    throw new ReplayedDomainError(outcome.code, outcome.message, outcome.details, outcome.subject);
  }

  /** Writes the outcome onto this request's own open claim; if a retry took the claim over, nothing commits. */
  private async store(tx: SqlTransaction, recordId: number, outcome: StoredOutcome<unknown>) {
    const written = await tx.run('update idempotency_records set outcome = ? where id = ? and outcome is null', [
      JSON.stringify(outcome),
      recordId,
    ]);
    if (written !== 1) throw new LostClaim();
  }
}

interface RecordRow {
  id: number | string;
  request_hash: string;
  outcome: string | null;
  /** SQLite: epoch milliseconds; PostgreSQL: a Date. */
  created_at: number | string | Date;
  expires_at: number | string | Date;
}

/** This request outlived its claim and a retry took the key over: its work rolls back, the retry's counts. */
class LostClaim extends DomainError {
  constructor() {
    super(
      'IDEMPOTENCY_KEY_IN_FLIGHT',
      'A retry with this idempotency key took over while this request was running; retry to get its outcome.',
    );
    this.name = 'LostClaim';
  }
}
