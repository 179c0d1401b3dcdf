import { Migration } from '@mikro-orm/migrations';

export class Migration20261126051601 extends Migration {
  // The generator also rebuilt every other table (its SQLite diff sees no change there, the shape test agrees): left out.
  override async up(): Promise<void> {
    this.addSql(`alter table \`accounts\` add column \`webhook_endpoint_cap\` integer null;`);
    this.addSql(`alter table \`accounts\` add column \`subscription_cap\` integer null;`);
  }
}
