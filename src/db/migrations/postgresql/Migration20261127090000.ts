import { Migration } from '@mikro-orm/migrations';

export class Migration20261127090000 extends Migration {
  // Each endpoint's delivery queue is leased by one instance's worker at a time (src/domain/webhook-queue.service.ts).
  override async up(): Promise<void> {
    this.addSql(`alter table "webhook_endpoints" add column "lease_owner" varchar(64) null, add column "lease_until" timestamptz null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "webhook_endpoints" drop column "lease_owner", drop column "lease_until";`);
  }
}
