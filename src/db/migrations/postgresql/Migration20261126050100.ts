import { Migration } from '@mikro-orm/migrations';

export class Migration20261126050100 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "event_relays" ("name" varchar(64) not null, "last_event_id" bigint not null, constraint "event_relays_pkey" primary key ("name"));`,
    );
    this.addSql(`insert into "event_relays" ("name", "last_event_id") values ('webhooks', 0);`);

    this.addSql(
      `create table "webhook_endpoints" ("id" bigserial primary key, "account_id" bigint not null, "url" varchar(2048) not null, "events" text not null, "secret" varchar(100) not null, "previous_secret" varchar(100) null, "previous_secret_expires_at" timestamptz null, "enabled" boolean not null default true, "disabled_reason" text null, "start_after_event_id" bigint not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "webhook_endpoints_account_id_index" on "webhook_endpoints" ("account_id");`);

    this.addSql(
      `create table "webhook_deliveries" ("id" bigserial primary key, "endpoint_id" bigint not null, "event_id" bigint not null, "event_type" varchar(64) not null, "attempt" int not null, "status" varchar(16) not null default 'pending', "scheduled_at" timestamptz not null, "claimed_by" varchar(64) null, "claimed_until" timestamptz null, "attempted_at" timestamptz null, "response_status" int null, "duration_ms" int null, "error" text null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "webhook_deliveries_endpoint_id_index" on "webhook_deliveries" ("endpoint_id");`);
    this.addSql(`create index "webhook_deliveries_due_index" on "webhook_deliveries" ("status", "scheduled_at");`);

    this.addSql(
      `alter table "webhook_endpoints" add constraint "webhook_endpoints_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "webhook_deliveries" add constraint "webhook_deliveries_endpoint_id_foreign" foreign key ("endpoint_id") references "webhook_endpoints" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook_deliveries" drop constraint "webhook_deliveries_endpoint_id_foreign";`);

    this.addSql(`drop table if exists "event_relays" cascade;`);

    this.addSql(`drop table if exists "webhook_endpoints" cascade;`);

    this.addSql(`drop table if exists "webhook_deliveries" cascade;`);
  }
}
