import { Migration } from '@mikro-orm/migrations';
import { refoldCategoryNameKeys } from '../category-name-keys.js';

export class Migration20261201200000 extends Migration {
  // Category names are unique by Unicode case folding (Straße = STRASSE, İstanbul = istanbul), no longer by lower case: every key is recomputed; collisions keep their rows and are reported at start.
  override async up(): Promise<void> {
    await refoldCategoryNameKeys(
      this,
      'drop index if exists `categories_name_key_unique`;',
      'create unique index `categories_name_key_unique` on `categories` (`name_key`);',
    );
  }
}
