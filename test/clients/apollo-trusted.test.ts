/**
 * docs/CLIENTS.md, "Trusted documents", with Apollo Client 4: GraphQL Codegen's client preset writes the manifest
 * (persisted documents, `__typename` added by its document transform) and Apollo's persisted-query link sends each
 * document's manifest hash; the service, with GRAPHQL_TRUSTED_ONLY=true, answers it, and Apollo's cache normalizes
 * the answer. Apollo's own hash (of its printing of the document) names no manifest entry.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { ApolloClient, ApolloLink, HttpLink, InMemoryCache } from '@apollo/client';
import { CombinedGraphQLErrors } from '@apollo/client/errors';
import { PersistedQueryLink } from '@apollo/client/link/persisted-queries';
import type { DocumentNode } from 'graphql';
import { projectPath } from '../../src/project-path.js';
import { createAccount, createPet, startApp, type TestApp } from '../helpers/app.js';
import { codegenPersistedDocuments } from '../graphql/support.js';

const OPERATIONS = `
import { graphql } from '../gql';
export const TrustedPets = graphql(\`
  query TrustedPets($first: Int) { pets(first: $first) { edges { node { id name } } } }
\`);
`;

describe('Apollo Client with trusted documents: the persisted-query link sends the manifest hash Codegen gave the document', () => {
  let dir: string;
  let t: TestApp;
  let key: string;
  let TrustedPets: DocumentNode;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'petstore-apollo-trusted-'));
    mkdirSync(join(dir, 'documents'));
    writeFileSync(join(dir, 'documents', 'operations.ts'), OPERATIONS);
    const manifest = await codegenPersistedDocuments(dir, [join(dir, 'documents', '*.ts')], { typename: true });
    // The generated documents, as the app's bundler would compile them.
    const generated = ts.transpileModule(readFileSync(join(dir, 'gql', 'graphql.ts'), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    symlinkSync(projectPath('node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, 'gql', 'graphql.mjs'), generated);
    ({ TrustedPetsDocument: TrustedPets } = (await import(pathToFileURL(join(dir, 'gql', 'graphql.mjs')).href)) as {
      TrustedPetsDocument: DocumentNode;
    });
    t = await startApp({
      env: { GRAPHQL_TRUSTED_DOCUMENTS: manifest, GRAPHQL_TRUSTED_ONLY: 'true' },
    });
    await createPet(t, { name: 'Trusted Rex' });
    key = (await createAccount(t, { name: 'App user' })).key;
  });
  after(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const client = (persisted: PersistedQueryLink) =>
    new ApolloClient({
      link: ApolloLink.from([persisted, new HttpLink({ uri: `${t.url}/graphql`, headers: { 'X-API-Key': key } })]),
      cache: new InMemoryCache(),
    });

  it("when the link's generateHash gives the document's __meta__.hash, then the query is answered from the manifest and its pets are normalized in the cache", async () => {
    // As docs/CLIENTS.md writes it.
    const persisted = new PersistedQueryLink({
      generateHash: (document) => (document as { __meta__?: { hash: string } }).__meta__!.hash.replace(/^sha256:/, ''),
    });
    const apollo = client(persisted);
    const { data } = await apollo.query({ query: TrustedPets, variables: { first: 5 } });
    const names = (data as { pets: { edges: Array<{ node: { name: string } }> } }).pets.edges.map((e) => e.node.name);
    assert.ok(names.includes('Trusted Rex'), JSON.stringify(data));
    const keys = Object.keys(apollo.cache.extract() as Record<string, unknown>);
    assert.ok(
      keys.some((k) => k.startsWith('Pet:')),
      `pets normalized by their id: ${keys.join(', ')}`,
    );
  });

  it('when the link hashes the document itself (its default), then the hash names no trusted document and the app gets DOCUMENT_NOT_TRUSTED', async () => {
    const persisted = new PersistedQueryLink({ sha256: (text: string) => createHash('sha256').update(text).digest('hex') });
    const refused = await client(persisted)
      .query({ query: TrustedPets, variables: { first: 5 } })
      .then(
        () => assert.fail('a hash of Apollo’s own printing is not in the manifest'),
        (error: unknown) => error,
      );
    // The refusal comes before Apollo runs, in the media type Apollo Client asks for: its errors reach the app.
    assert.ok(CombinedGraphQLErrors.is(refused), String(refused));
    assert.equal(refused.errors[0]?.extensions?.code, 'DOCUMENT_NOT_TRUSTED');
  });
});
