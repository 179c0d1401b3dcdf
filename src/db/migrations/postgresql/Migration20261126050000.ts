import { Migration } from '@mikro-orm/migrations';

export class Migration20261126050000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "events" ("id" bigserial primary key, "type" varchar(64) not null, "data" text not null, "account_id" bigint null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "events_created_at_index" on "events" ("created_at");`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists "events" cascade;`);
  }
}
