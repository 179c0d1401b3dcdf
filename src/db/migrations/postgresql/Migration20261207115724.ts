import { Migration } from '@mikro-orm/migrations';

export class Migration20261207115724 extends Migration {
  // A deleted category's last state, for `Pet.category` of pets whose category has since been deleted; filled from the category.deleted events kept (the latest per id).
  override async up(): Promise<void> {
    this.addSql(
      'create table "deleted_categories" ("id" bigint not null, "name" varchar(100) not null, "description" varchar(1000) null, "deleted_at" timestamptz not null, constraint "deleted_categories_pkey" primary key ("id"));',
    );
    this.addSql(
      `insert into "deleted_categories" ("id", "name", "description", "deleted_at") select distinct on (("data"::json->>'id')::bigint) ("data"::json->>'id')::bigint, "data"::json->>'name', "data"::json->>'description', "created_at" from "events" where "type" = 'category.deleted' order by ("data"::json->>'id')::bigint, "id" desc;`,
    );
  }
}
