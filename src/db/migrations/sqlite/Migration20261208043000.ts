import { Migration } from '@mikro-orm/migrations';

export class Migration20261208043000 extends Migration {
  // Whether an endpoint's last attempt failed: its account's other endpoints come first for a place.
  override async up(): Promise<void> {
    this.addSql('alter table `webhook_endpoints` add column `failing` integer not null default false;');
  }

  override async down(): Promise<void> {
    this.addSql('alter table `webhook_endpoints` drop column `failing`;');
  }
}
