import { Entity, ManyToOne, PrimaryKey, Property, Unique, BigIntType } from '@mikro-orm/core';
import { Account } from './account.entity.js';

/** One use of an Idempotency-Key, scoped to the account, kept 24 hours. */
@Entity({ tableName: 'idempotency_records' })
@Unique({ name: 'idempotency_account_key_unique', properties: ['account', 'key'] })
export class IdempotencyRecord {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @ManyToOne({ entity: () => Account, deleteRule: 'cascade' })
  account: Account;

  @Property({ type: 'string', length: 255 })
  key: string;

  /** SHA-256 of the canonical request payload. */
  @Property({ type: 'string', length: 64 })
  requestHash: string;

  /** Null while the first request is in flight; then the stored outcome (JSON). */
  @Property({ type: 'text', nullable: true })
  outcome: string | null = null;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime' })
  expiresAt: Date;

  constructor(account: Account, key: string, requestHash: string, expiresAt: Date) {
    this.account = account;
    this.key = key;
    this.requestHash = requestHash;
    this.expiresAt = expiresAt;
  }
}
