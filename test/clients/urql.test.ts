/** docs/CLIENTS.md's urql client, compiled as written, against the service: GET queries with only X-API-Key, global ids. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import type { Client as UrqlClient } from '@urql/core';
import { projectPath } from '../../src/project-path.js';
import { createAccount, createPet, startApp, type TestApp } from '../helpers/app.js';
import { doc } from '../helpers/readme.js';

describe('urql: the default client of docs/CLIENTS.md against the service (issue 49)', () => {
  let t: TestApp;
  let dir: string;
  let petstoreUrql: (url: string, apiKey: string) => UrqlClient;
  before(async () => {
    t = await startApp();
    const section = doc('CLIENTS.md').split('\n## urql\n')[1]?.split('\n## ')[0];
    const source = section && /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(source, 'docs/CLIENTS.md has a urql section with a ```ts block');
    const { outputText } = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    });
    dir = mkdtempSync(join(tmpdir(), 'petstore-urql-'));
    symlinkSync(projectPath('node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, 'urql-client.mjs'), outputText);
    ({ petstoreUrql } = (await import(pathToFileURL(join(dir, 'urql-client.mjs')).href)) as { petstoreUrql: typeof petstoreUrql });
  });
  after(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('when the client lists pets and reads one back through node(id:), then both answer, the pet and its category apart', async () => {
    await createPet(t, { name: 'Urqlie', category: 'Urql cats' });
    const { key } = await createAccount(t, { name: 'Urql' });
    const client = petstoreUrql(`${t.url}/graphql`, key);
    const list = await client.query('query Pets { pets(first: 5) { edges { node { id name category { id name } } } } }', {}).toPromise();
    assert.equal(list.error, undefined, String(list.error));
    const pet = list.data.pets.edges[0].node;
    assert.equal(pet.name, 'Urqlie');
    assert.notEqual(pet.id, pet.category.id, 'a pet and a category with the same database id have different ids');
    const node = await client
      .query('query Node($id: ID!) { node(id: $id) { __typename id ... on Pet { name } } }', { id: pet.id })
      .toPromise();
    assert.equal(node.error, undefined, String(node.error));
    assert.deepEqual(node.data.node, { __typename: 'Pet', id: pet.id, name: 'Urqlie' });
    const category = await client
      .query('query Node($id: ID!) { node(id: $id) { ... on Category { name } } }', { id: pet.category.id })
      .toPromise();
    assert.deepEqual(category.data.node, { __typename: 'Category', name: 'Urql cats' });
  });
});
