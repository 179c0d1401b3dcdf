import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique, BigIntType } from '@mikro-orm/core';
import { Account } from './account.entity.js';

/** An API key. Only its SHA-256 hash is stored; the prefix identifies it in lists. */
@Entity({ tableName: 'api_keys' })
export class ApiKey {
  @PrimaryKey({ type: new BigIntType('number'), autoincrement: true })
  id!: number;

  @Index({ name: 'api_keys_account_id_index' })
  @ManyToOne({ entity: () => Account, deleteRule: 'cascade' })
  account: Account;

  @Property({ type: 'string', length: 16 })
  prefix: string;

  @Unique({ name: 'api_keys_hash_unique' })
  @Property({ type: 'string', length: 64 })
  hash: string;

  @Property({ type: 'datetime' })
  createdAt: Date = new Date();

  @Property({ type: 'datetime', nullable: true })
  revokedAt: Date | null = null;

  /** Until when the key is banned for sending while rate limited (docs/RATE-LIMITS.md, "Bans"); the durable record of the ban. */
  @Property({ type: 'datetime', nullable: true })
  bannedUntil: Date | null = null;

  constructor(account: Account, prefix: string, hash: string) {
    this.account = account;
    this.prefix = prefix;
    this.hash = hash;
  }
}
