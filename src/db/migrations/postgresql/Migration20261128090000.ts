import { Migration } from '@mikro-orm/migrations';

export class Migration20261128090000 extends Migration {
  // Events are read in the order of their writing transaction, then id, below the snapshot's horizon (no writers' lock):
  // each event records its transaction's id, and each read position (the webhook relay's, an endpoint's start) is a
  // (transaction id, event id) pair. Events written before this, under the lock, committed in id order: transaction 0.
  override async up(): Promise<void> {
    this.addSql(`alter table "events" add column "txid" bigint not null default 0;`);
    this.addSql(`create index "events_txid_id_index" on "events" ("txid", "id");`);
    this.addSql(`alter table "event_relays" add column "last_txid" bigint not null default 0;`);
    this.addSql(`alter table "webhook_endpoints" add column "start_after_txid" bigint not null default 0;`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop index "events_txid_id_index";`);
    this.addSql(`alter table "events" drop column "txid";`);
    this.addSql(`alter table "event_relays" drop column "last_txid";`);
    this.addSql(`alter table "webhook_endpoints" drop column "start_after_txid";`);
  }
}
