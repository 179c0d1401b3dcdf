import { Migration } from '@mikro-orm/migrations';

export class Migration20261125223447 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table "accounts" ("id" bigserial primary key, "name" varchar(100) not null, "role" text check ("role" in ('staff', 'customer')) not null, "plan" text check ("plan" in ('free', 'pro', 'business', 'enterprise')) not null, "per_minute" int null, "per_day" int null, "created_at" timestamptz not null);`,
    );

    this.addSql(
      `create table "api_keys" ("id" bigserial primary key, "account_id" bigint not null, "prefix" varchar(16) not null, "hash" varchar(64) not null, "created_at" timestamptz not null, "revoked_at" timestamptz null);`,
    );
    this.addSql(`create index "api_keys_account_id_index" on "api_keys" ("account_id");`);
    this.addSql(`alter table "api_keys" add constraint "api_keys_hash_unique" unique ("hash");`);

    this.addSql(
      `create table "categories" ("id" bigserial primary key, "name" varchar(100) not null, "name_key" varchar(100) not null, "description" varchar(1000) null, "created_at" timestamptz not null);`,
    );
    this.addSql(`alter table "categories" add constraint "categories_name_key_unique" unique ("name_key");`);

    this.addSql(
      `create table "idempotency_records" ("id" bigserial primary key, "account_id" bigint not null, "key" varchar(255) not null, "request_hash" varchar(64) not null, "outcome" text null, "created_at" timestamptz not null, "expires_at" timestamptz not null);`,
    );
    this.addSql(`alter table "idempotency_records" add constraint "idempotency_account_key_unique" unique ("account_id", "key");`);

    this.addSql(
      `create table "pets" ("id" bigserial primary key, "name" varchar(100) not null, "category_id" bigint not null, "status" text check ("status" in ('available', 'pending', 'sold')) not null, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "pets_category_id_index" on "pets" ("category_id");`);
    this.addSql(`create index "pets_status_index" on "pets" ("status");`);

    this.addSql(
      `create table "orders" ("id" bigserial primary key, "pet_id" bigint null, "account_id" bigint not null, "quantity" int not null, "ship_date" timestamptz null, "complete" boolean not null default false, "created_at" timestamptz not null);`,
    );
    this.addSql(`create index "orders_pet_id_index" on "orders" ("pet_id");`);
    this.addSql(`create index "orders_account_id_index" on "orders" ("account_id");`);

    this.addSql(
      `create table "inventory" ("pet_id" bigint not null, "quantity" int not null, constraint "inventory_pkey" primary key ("pet_id"));`,
    );

    this.addSql(
      `alter table "api_keys" add constraint "api_keys_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "idempotency_records" add constraint "idempotency_records_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "pets" add constraint "pets_category_id_foreign" foreign key ("category_id") references "categories" ("id") on update cascade on delete restrict;`,
    );

    this.addSql(
      `alter table "orders" add constraint "orders_pet_id_foreign" foreign key ("pet_id") references "pets" ("id") on update cascade on delete set null;`,
    );
    this.addSql(
      `alter table "orders" add constraint "orders_account_id_foreign" foreign key ("account_id") references "accounts" ("id") on update cascade on delete cascade;`,
    );

    this.addSql(
      `alter table "inventory" add constraint "inventory_pet_id_foreign" foreign key ("pet_id") references "pets" ("id") on update cascade on delete cascade;`,
    );
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "api_keys" drop constraint "api_keys_account_id_foreign";`);

    this.addSql(`alter table "idempotency_records" drop constraint "idempotency_records_account_id_foreign";`);

    this.addSql(`alter table "orders" drop constraint "orders_account_id_foreign";`);

    this.addSql(`alter table "pets" drop constraint "pets_category_id_foreign";`);

    this.addSql(`alter table "orders" drop constraint "orders_pet_id_foreign";`);

    this.addSql(`alter table "inventory" drop constraint "inventory_pet_id_foreign";`);

    this.addSql(`drop table if exists "accounts" cascade;`);

    this.addSql(`drop table if exists "api_keys" cascade;`);

    this.addSql(`drop table if exists "categories" cascade;`);

    this.addSql(`drop table if exists "idempotency_records" cascade;`);

    this.addSql(`drop table if exists "pets" cascade;`);

    this.addSql(`drop table if exists "orders" cascade;`);

    this.addSql(`drop table if exists "inventory" cascade;`);
  }
}
