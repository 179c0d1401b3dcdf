import { Migration } from '@mikro-orm/migrations';

/** Bans recorded on the key (they outlive a Redis restart); the shown prefix keeps 4 characters of the secret. */
export class Migration20261126041000 extends Migration {
  override async up(): Promise<void> {
    this.addSql(`alter table \`api_keys\` add column \`banned_until\` datetime null;`);
    this.addSql(`update \`api_keys\` set \`prefix\` = substr(\`prefix\`, 1, 8);`);
  }

  override async down(): Promise<void> {
    this.addSql(`alter table \`api_keys\` drop column \`banned_until\`;`);
  }
}
