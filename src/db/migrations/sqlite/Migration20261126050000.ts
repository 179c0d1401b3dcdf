import { Migration } from '@mikro-orm/migrations';

export class Migration20261126050000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create table \`events\` (\`id\` integer not null primary key autoincrement, \`type\` text not null, \`data\` text not null, \`account_id\` bigint null, \`created_at\` datetime not null);`,
    );
    this.addSql(`create index \`events_created_at_index\` on \`events\` (\`created_at\`);`);
  }

  override async down(): Promise<void> {
    this.addSql(`drop table if exists \`events\`;`);
  }
}
