import { Migration } from '@mikro-orm/migrations';
import { refoldCategoryNameKeys } from '../category-name-keys.js';

export class Migration20261201200000 extends Migration {
  // Category names are unique by Unicode case folding (Straße = STRASSE, İstanbul = istanbul), no longer by lower case: every key is recomputed; collisions keep their rows and are reported at start. A folded name is up to three times as long.
  override async up(): Promise<void> {
    await this.execute(`alter table "categories" alter column "name_key" type varchar(300) using ("name_key"::varchar(300));`);
    await refoldCategoryNameKeys(
      this,
      'alter table "categories" drop constraint "categories_name_key_unique";',
      'alter table "categories" add constraint "categories_name_key_unique" unique ("name_key");',
    );
  }
}
