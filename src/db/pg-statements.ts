import { LRUCache } from 'lru-cache';

/**
 * PostgreSQL named prepared statements for the plain-SQL reader and writer: `?` placeholders become `$n`, and
 * each SQL text gets one name. A name belongs to the connection, and pooled connections outlive any one
 * reader or writer (tests make several on one pool): a name, once given, always stands for the same text in
 * this process, or `pg` refuses the second text. So names come from a counter that never repeats: a text that
 * left the cache (the least recently used, when it holds MAX_NAMED texts) comes back under a new name, and the old
 * name's statement stays prepared on each connection that used it. MAX_NAMED is above the number of texts the domain
 * can make (a pet list alone has 16 × 101 shapes: its conditions and 0–100 ids), so no text leaves the cache and the
 * statements a connection holds are bounded by the shapes clients use, however they cycle through them.
 */
const MAX_NAMED = 4096;
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
