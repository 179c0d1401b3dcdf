import { Migration } from '@mikro-orm/migrations';

export class Migration20261126103000 extends Migration {
  // Every order wrote this index's page too; the purge finds its bound by id instead (EventsService.purgeExpired).
  override async up(): Promise<void> {
    this.addSql(`drop index if exists \`events_created_at_index\`;`);
  }

  override async down(): Promise<void> {
    this.addSql(`create index \`events_created_at_index\` on \`events\` (\`created_at\`);`);
  }
}
