import { Migration } from '@mikro-orm/migrations';

export class Migration20261207115723 extends Migration {
  // A deleted category's last state, for `Pet.category` of pets whose category has since been deleted; filled from the category.deleted events kept (the latest per id).
  override async up(): Promise<void> {
    this.addSql(
      'create table `deleted_categories` (`id` bigint not null, `name` text not null, `description` text null, `deleted_at` datetime not null, primary key (`id`));',
    );
    this.addSql(
      "insert or replace into `deleted_categories` (`id`, `name`, `description`, `deleted_at`) select json_extract(`data`, '$.id'), json_extract(`data`, '$.name'), json_extract(`data`, '$.description'), `created_at` from `events` where `type` = 'category.deleted' order by `id`;",
    );
  }
}
