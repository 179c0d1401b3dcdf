import { Migration } from '@mikro-orm/migrations';

export class Migration20261126050100 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`create table \`event_relays\` (\`name\` text not null, \`last_event_id\` bigint not null, primary key (\`name\`));`);
    this.addSql(`insert into \`event_relays\` (\`name\`, \`last_event_id\`) values ('webhooks', 0);`);
    this.addSql(
      `create table \`webhook_endpoints\` (\`id\` integer not null primary key autoincrement, \`account_id\` bigint not null, \`url\` text not null, \`events\` text not null, \`secret\` text not null, \`previous_secret\` text null, \`previous_secret_expires_at\` datetime null, \`enabled\` integer not null default true, \`disabled_reason\` text null, \`start_after_event_id\` bigint not null, \`created_at\` datetime not null, constraint \`webhook_endpoints_account_id_foreign\` foreign key(\`account_id\`) references \`accounts\`(\`id\`) on delete cascade on update cascade);`,
    );
    this.addSql(`create index \`webhook_endpoints_account_id_index\` on \`webhook_endpoints\` (\`account_id\`);`);
    this.addSql(
      `create table \`webhook_deliveries\` (\`id\` integer not null primary key autoincrement, \`endpoint_id\` bigint not null, \`event_id\` bigint not null, \`event_type\` text not null, \`attempt\` integer not null, \`status\` text not null default 'pending', \`scheduled_at\` datetime not null, \`claimed_by\` text null, \`claimed_until\` datetime null, \`attempted_at\` datetime null, \`response_status\` integer null, \`duration_ms\` integer null, \`error\` text null, \`created_at\` datetime not null, constraint \`webhook_deliveries_endpoint_id_foreign\` foreign key(\`endpoint_id\`) references \`webhook_endpoints\`(\`id\`) on delete cascade on update cascade);`,
    );
    this.addSql(`create index \`webhook_deliveries_endpoint_id_index\` on \`webhook_deliveries\` (\`endpoint_id\`);`);
    this.addSql(`create index \`webhook_deliveries_due_index\` on \`webhook_deliveries\` (\`status\`, \`scheduled_at\`);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`webhook_deliveries\`;`);
    this.addSql(`drop table if exists \`webhook_endpoints\`;`);
    this.addSql(`drop table if exists \`event_relays\`;`);
  }
}
