import { Migration } from '@mikro-orm/migrations';

export class Migration20261125223447 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table \`accounts\` (\`id\` integer not null primary key autoincrement, \`name\` text not null, \`role\` text check (\`role\` in ('staff', 'customer')) not null, \`plan\` text check (\`plan\` in ('free', 'pro', 'business', 'enterprise')) not null, \`per_minute\` integer null, \`per_day\` integer null, \`created_at\` datetime not null);`,
    );

    this.addSql(
      `create table \`api_keys\` (\`id\` integer not null primary key autoincrement, \`account_id\` bigint not null, \`prefix\` text not null, \`hash\` text not null, \`created_at\` datetime not null, \`revoked_at\` datetime null, constraint \`api_keys_account_id_foreign\` foreign key(\`account_id\`) references \`accounts\`(\`id\`) on delete cascade on update cascade);`,
    );
    this.addSql(`create index \`api_keys_account_id_index\` on \`api_keys\` (\`account_id\`);`);
    this.addSql(`create unique index \`api_keys_hash_unique\` on \`api_keys\` (\`hash\`);`);

    this.addSql(
      `create table \`categories\` (\`id\` integer not null primary key autoincrement, \`name\` text not null, \`name_key\` text not null, \`description\` text null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create unique index \`categories_name_key_unique\` on \`categories\` (\`name_key\`);`);

    this.addSql(
      `create table \`idempotency_records\` (\`id\` integer not null primary key autoincrement, \`account_id\` bigint not null, \`key\` text not null, \`request_hash\` text not null, \`outcome\` text null, \`created_at\` datetime not null, \`expires_at\` datetime not null, constraint \`idempotency_records_account_id_foreign\` foreign key(\`account_id\`) references \`accounts\`(\`id\`) on delete cascade on update cascade);`,
    );
    this.addSql(`create index \`idempotency_records_account_id_index\` on \`idempotency_records\` (\`account_id\`);`);
    this.addSql(`create unique index \`idempotency_account_key_unique\` on \`idempotency_records\` (\`account_id\`, \`key\`);`);

    this.addSql(
      `create table \`pets\` (\`id\` integer not null primary key autoincrement, \`name\` text not null, \`category_id\` bigint not null, \`status\` text check (\`status\` in ('available', 'pending', 'sold')) not null, \`created_at\` datetime not null, constraint \`pets_category_id_foreign\` foreign key(\`category_id\`) references \`categories\`(\`id\`) on delete restrict on update cascade);`,
    );
    this.addSql(`create index \`pets_category_id_index\` on \`pets\` (\`category_id\`);`);
    this.addSql(`create index \`pets_status_index\` on \`pets\` (\`status\`);`);

    this.addSql(
      `create table \`orders\` (\`id\` integer not null primary key autoincrement, \`pet_id\` bigint null, \`account_id\` bigint not null, \`quantity\` integer not null, \`ship_date\` datetime null, \`complete\` integer not null default false, \`created_at\` datetime not null, constraint \`orders_pet_id_foreign\` foreign key(\`pet_id\`) references \`pets\`(\`id\`) on delete set null on update cascade, constraint \`orders_account_id_foreign\` foreign key(\`account_id\`) references \`accounts\`(\`id\`) on delete cascade on update cascade);`,
    );
    this.addSql(`create index \`orders_pet_id_index\` on \`orders\` (\`pet_id\`);`);
    this.addSql(`create index \`orders_account_id_index\` on \`orders\` (\`account_id\`);`);

    this.addSql(
      `create table \`inventory\` (\`pet_id\` bigint not null, \`quantity\` integer not null, constraint \`inventory_pet_id_foreign\` foreign key(\`pet_id\`) references \`pets\`(\`id\`) on delete cascade on update cascade, primary key (\`pet_id\`));`,
    );
  }
}
