import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { namedStatement } from '../../src/db/pg-statements.js';

describe('PostgreSQL statement names', () => {
  it('when a text is asked again, then it has the same name and its placeholders numbered', () => {
    const first = namedStatement('select * from pets where id = ? and status = ?');
    assert.deepEqual(namedStatement('select * from pets where id = ? and status = ?'), first);
    assert.equal(first.text, 'select * from pets where id = $1 and status = $2');
  });

  it('when more texts than the cache holds have passed, then a name never stands for two texts', () => {
    const byName = new Map<string, string>();
    const record = (sql: string) => {
      const { name, text } = namedStatement(sql);
      const known = byName.get(name);
      assert.ok(known === undefined || known === text, `${name} named both ${known} and ${text}`);
      byName.set(name, text);
      return name;
    };
    const hot = 'select id from pets where id in (?)';
    const hotName = record(hot);
    for (let i = 0; i < 2500; i++) {
      record(`select ${i} from pets where id = ?`);
      if (i % 100 === 0) record(hot);
    }
    // A text in use keeps its name: the least recently used texts leave the cache first.
    assert.equal(namedStatement(hot).name, hotName);
    // The earliest texts left it; back again, they get a name no other text ever had.
    record('select 0 from pets where id = ?');
  });
});
