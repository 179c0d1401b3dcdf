import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { toConnection } from '../../src/graphql/schema/connection.type.js';
import { encodeCursor } from '../../src/domain/pagination.js';

describe('GraphQL connections: cursors are encoded only when read', () => {
  const page = { items: [{ id: 3 }, { id: 5 }, { id: 8 }], nextCursor: encodeCursor(8) };

  it('when a page becomes a connection and only its nodes are read, then no cursor is encoded', () => {
    const encoded: number[] = [];
    const connection = toConnection(
      page,
      (n) => n.id,
      null,
      (id) => {
        encoded.push(id);
        return encodeCursor(id);
      },
    );
    assert.deepEqual(
      connection.edges.map((e) => e.node.id),
      [3, 5, 8],
    );
    assert.equal(connection.pageInfo.hasNextPage, true);
    assert.equal(connection.pageInfo.hasPreviousPage, false);
    assert.deepEqual(encoded, [], 'a cursor was encoded that nobody read');
  });

  it('when the cursors are read, then each is the keyset cursor of its edge, and pageInfo names the first and the last', () => {
    const encoded: number[] = [];
    const connection = toConnection(
      page,
      (n) => n.id,
      'after-something',
      (id) => {
        encoded.push(id);
        return encodeCursor(id);
      },
    );
    assert.deepEqual(
      connection.edges.map((e) => e.cursor),
      [3, 5, 8].map(encodeCursor),
    );
    const { hasNextPage, hasPreviousPage, startCursor, endCursor } = connection.pageInfo;
    assert.deepEqual(
      { hasNextPage, hasPreviousPage, startCursor, endCursor },
      { hasNextPage: true, hasPreviousPage: true, startCursor: encodeCursor(3), endCursor: encodeCursor(8) },
    );
    assert.deepEqual(encoded, [3, 5, 8, 3, 8]);
  });

  it('when a page is empty and last, then pageInfo has no cursors and no next page', () => {
    const connection = toConnection({ items: [] as Array<{ id: number }>, nextCursor: null }, (n) => n.id);
    assert.deepEqual(connection.edges, []);
    assert.equal(connection.pageInfo.hasNextPage, false);
    assert.equal(connection.pageInfo.startCursor, null);
    assert.equal(connection.pageInfo.endCursor, null);
  });
});
