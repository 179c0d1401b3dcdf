import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, createAccount, recordSql, type TestApp } from '../helpers/app.js';
import { dataOf, gql } from './support.js';
import { globalId } from '../../src/graphql/global-id.js';

/**
 * Relations are batched, so a page of 100 pets with their categories and inventories costs at
 * most 3 SQL statements (pets, categories, inventory), whatever the page size.
 */
describe('GraphQL relations are batched (no N+1)', () => {
  let t: TestApp;
  let sql: ReturnType<typeof recordSql>;
  before(async () => {
    t = await startApp();
    sql = recordSql(t.app);
    // 5 categories with 20 pets each, created with aliased mutations, 10 to a request (under the alias limit).
    const categories = dataOf(
      await gql(
        t.admin,
        `mutation { ${[0, 1, 2, 3, 4].map((i) => `c${i}: createCategory(input: {name: "Batch ${i}"}) { id }`).join(' ')} }`,
      ),
    );
    const ids = Object.values(categories).map((c: any) => c.id);
    for (let chunk = 0; chunk < 10; chunk++) {
      const pets = Array.from({ length: 10 }, (_, j) => chunk * 10 + j).map(
        (i) => `p${i}: createPet(input: {name: "Pet ${i}", categoryId: "${ids[i % 5]}"}) { id }`,
      );
      dataOf(await gql(t.admin, `mutation { ${pets.join(' ')} }`));
    }
    const buyer = await createAccount(t, { role: 'customer' });
    for (let i = 0; i < 10; i++)
      dataOf(await gql(buyer.client, `mutation { placeOrder(input: {petId: "${globalId('Pet', i + 1)}", quantity: 1}) { id } }`));
  });
  after(() => t.close());

  /**
   * Statements the query ran, without the (cached, per key) authentication lookup and without what
   * the webhook worker runs on the same connection pool in the background (its idle check reads its own tables).
   */
  async function measure(query: string) {
    sql.start();
    const res = await gql(t.admin, query);
    const ran = sql.stop().filter((statement) => !/\bapi_keys\b/.test(statement));
    assert.ok(ran.length > 0, 'the statements were recorded (ORM and prepared-statement reads)');
    return { data: dataOf(res), ran };
  }

  it('when a page of 100 pets is read with each category and inventory, then it costs at most 3 SQL statements', async () => {
    const { data, ran } = await measure(
      '{ pets(first: 100) { edges { cursor node { id name status category { id name } inventory { petId quantity status } } } pageInfo { hasNextPage endCursor } } }',
    );
    assert.equal(data.pets.edges.length, 100);
    for (const { node } of data.pets.edges) {
      assert.match(node.category.name, /^Batch \d$/);
      assert.equal(node.inventory.petId, node.id);
    }
    assert.ok(ran.length <= 3, `${ran.length} statements:\n${ran.join('\n')}`);
  });

  it("when 5 categories are read with a page of each one's pets, then it costs at most 2 SQL statements", async () => {
    const { data, ran } = await measure(
      '{ categories(first: 5) { edges { node { id pets(first: 3) { edges { node { id categoryId } } pageInfo { hasNextPage endCursor } } } } } }',
    );
    assert.equal(data.categories.edges.length, 5);
    assert.ok(ran.length <= 2, `${ran.length} statements:\n${ran.join('\n')}`);
    for (const { node: category } of data.categories.edges) {
      const pets = category.pets.edges.map((e: any) => e.node);
      assert.equal(pets.length, 3, 'each category gets its own page of 3');
      assert.ok(pets.every((p: any) => p.categoryId === category.id));
      assert.equal(category.pets.pageInfo.hasNextPage, true);
    }
  });

  it("when a category's pets are paged with after, then the pages cover its 20 pets once, in id order", async () => {
    const seen: number[] = [];
    let after: string | null = null;
    for (let page = 0; page < 5; page++) {
      const res: any = await gql(
        t.admin,
        `query($after: String) { category(id: "${globalId('Category', 2)}") { pets(first: 8, after: $after) { edges { node { databaseId } } pageInfo { hasNextPage endCursor } } } }`,
        {
          after,
        },
      );
      const pets: any = dataOf(res).category.pets;
      seen.push(...pets.edges.map((e: any) => e.node.databaseId));
      if (!pets.pageInfo.hasNextPage) break;
      after = pets.pageInfo.endCursor;
    }
    assert.deepEqual(
      seen,
      Array.from({ length: 20 }, (_, i) => 2 + i * 5),
    );
  });

  it('when 10 orders are read with their pets and categories, then it costs at most 3 SQL statements', async () => {
    const { data, ran } = await measure('{ orders(first: 100) { edges { node { id pet { id category { name } } } } } }');
    assert.equal(data.orders.edges.length, 10);
    assert.ok(data.orders.edges.every((e: any) => e.node.pet.category.name.startsWith('Batch')));
    assert.ok(ran.length <= 3, `${ran.length} statements:\n${ran.join('\n')}`);
  });
});
