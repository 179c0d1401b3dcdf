import { Migration } from '@mikro-orm/migrations';

export class Migration20261128090000 extends Migration {
  // The read position becomes (transaction id, event id) on both databases; SQLite has one writer at a time, so its
  // events commit in id order and all record transaction 0 (see the PostgreSQL migration of the same name).
  override async up(): Promise<void> {
    this.addSql(`alter table \`events\` add column \`txid\` bigint not null default 0;`);
    this.addSql(`create index \`events_txid_id_index\` on \`events\` (\`txid\`, \`id\`);`);
    this.addSql(`alter table \`event_relays\` add column \`last_txid\` bigint not null default 0;`);
    this.addSql(`alter table \`webhook_endpoints\` add column \`start_after_txid\` bigint not null default 0;`);
  }
}
