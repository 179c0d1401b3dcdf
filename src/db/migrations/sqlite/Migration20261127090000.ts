import { Migration } from '@mikro-orm/migrations';

export class Migration20261127090000 extends Migration {
  // Each endpoint's delivery queue is leased by one instance's worker at a time (src/domain/webhook-queue.service.ts).
  override async up(): Promise<void> {
    this.addSql(`alter table \`webhook_endpoints\` add column \`lease_owner\` text null;`);
    this.addSql(`alter table \`webhook_endpoints\` add column \`lease_until\` datetime null;`);
  }
}
