import { Migration } from '@mikro-orm/migrations';

export class Migration20261126051602 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table "accounts" add column "webhook_endpoint_cap" int null, add column "subscription_cap" int null;`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table "accounts" drop column "webhook_endpoint_cap", drop column "subscription_cap";`);
  }
}
