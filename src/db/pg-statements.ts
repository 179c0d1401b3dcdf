/**
 * PostgreSQL named prepared statements for the plain-SQL reader and writer: `?` placeholders become `$n`, and
 * each SQL text gets one name for the whole process. A name belongs to the connection, and pooled connections
 * outlive any one reader or writer (tests make several on one pool): the same text must always carry the same
 * name, and two texts never share one, or `pg` refuses the second.
 */
const named = new Map<string, { name: string; text: string }>();

export function namedStatement(sql: string): { name: string; text: string } {
  let statement = named.get(sql);
  if (!statement) {
    let n = 0;
    statement = { name: `petstore_${named.size + 1}`, text: sql.replace(/\?/g, () => `$${++n}`) };
    named.set(sql, statement);
  }
  return statement;
}
