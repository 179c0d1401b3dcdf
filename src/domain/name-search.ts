/**
 * A case-insensitive substring condition on a pet's name. PostgreSQL's lower() folds every alphabet;
 * SQLite's folds only ASCII, so there the text becomes a GLOB pattern in which each letter is the
 * set of its case forms (`[äÄ]`) and the GLOB wildcards stand for themselves.
 */
export function nameContains(text: string, dialect: 'sqlite' | 'postgresql'): { sql: string; param: string } {
  if (dialect === 'sqlite') {
    const pattern = [...text]
      .map((c) => {
        const forms = new Set([c, c.toLowerCase(), c.toUpperCase(), c.toLowerCase().toUpperCase()].filter((f) => [...f].length === 1));
        return forms.size > 1 || '*?['.includes(c) ? `[${[...forms].join('')}]` : c;
      })
      .join('');
    return { sql: 'name glob ?', param: `*${pattern}*` };
  }
  // LIKE with an explicit escape character, so that %, _ and \ in the text stand for themselves.
  const escaped = text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`);
  return { sql: `lower(name) like ? escape '\\'`, param: `%${escaped}%` };
}
