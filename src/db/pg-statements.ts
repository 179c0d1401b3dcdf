import { LRUCache } from 'lru-cache';

/**
 * PostgreSQL named prepared statements for the plain-SQL reader and writer: `?` placeholders become `$n`, and
 * each SQL text gets one name. A name belongs to the connection, and pooled connections outlive any one
 * reader or writer (tests make several on one pool): a name, once given, always stands for the same text in
 * this process, or `pg` refuses the second text. So names come from a counter that never repeats: a text that
 * left the cache (the least recently used, when it holds MAX_NAMED texts) comes back under a new name.
 */
const MAX_NAMED = 1000;
let lastName = 0;
const named = new LRUCache<string, { name: string; text: string }>({ max: MAX_NAMED });

export function namedStatement(sql: string): { name: string; text: string } {
  let statement = named.get(sql);
  if (!statement) {
    let n = 0;
    statement = { name: `petstore_${++lastName}`, text: sql.replace(/\?/g, () => `$${++n}`) };
    named.set(sql, statement);
  }
  return statement;
}
