import { Migration } from '@mikro-orm/migrations';

export class Migration20261128180000 extends Migration {
  // The W3C trace context of the change that wrote an event (null when tracing is off): its webhook deliveries and subscription pushes link to it.
  override async up(): Promise<void> {
    this.addSql(`alter table \`events\` add column \`traceparent\` text null;`);
  }
}
