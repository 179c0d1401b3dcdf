/**
 * Names are compared and stored in one normal form (NFC, no invisible format characters, trimmed), in
 * the domain, so both facades apply the same uniqueness rule: "Dogs\u200b" is "Dogs".
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';
import { assertError } from '../rest/support.js';
import { assertGraphQLError, dataOf, gql } from '../graphql/support.js';

const INVISIBLE = ['Dogs\u200b', '\u200bDogs', 'Do\u00adgs', 'Dogs\u2060', '\ufeffDogs', 'Dogs\u200e'];

describe('names: invisible characters do not make a different name', () => {
  let t: TestApp;
  before(async () => {
    t = await startApp();
  });
  after(() => t.close());

  it('when a category name differs from an existing one only by format characters, then REST answers 409 NAME_TAKEN', async () => {
    const first = await t.admin.post('/v1/categories', { name: 'Dogs' });
    assert.equal(first.status, 201, first.text);
    for (const name of INVISIBLE) assertError(await t.admin.post('/v1/categories', { name }), 409, 'NAME_TAKEN');
    const decomposed = await t.admin.post('/v1/categories', { name: 'Cafe\u0301' });
    assert.equal(decomposed.status, 201, decomposed.text);
    assert.equal(decomposed.body.name, 'Caf\u00e9', 'stored in NFC');
    assertError(await t.admin.post('/v1/categories', { name: 'Caf\u00e9' }), 409, 'NAME_TAKEN');
  });

  it('when a category name differs from an existing one only by format characters, then GraphQL answers NAME_TAKEN', async () => {
    dataOf(await gql(t.admin, 'mutation($n: String!) { createCategory(input: {name: $n}) { id } }', { n: 'Cats' }));
    for (const n of ['Cats\u200b', '\u200d Cats', 'C\u00adats']) {
      assertGraphQLError(await gql(t.admin, 'mutation($n: String!) { createCategory(input: {name: $n}) { id } }', { n }), 'NAME_TAKEN', 409);
    }
  });

  it('when names carry format characters, then both facades store and show them without', async () => {
    const rest = await t.admin.post('/v1/categories', { name: '\u200bBirds\u2060', description: 'Par\u00adrots' });
    assert.equal(rest.status, 201, rest.text);
    assert.deepEqual([rest.body.name, rest.body.description], ['Birds', 'Parrots']);
    const pet = await t.admin.post('/v1/pets', { name: 'Po\u200blly', categoryId: rest.body.id });
    assert.equal(pet.status, 201, pet.text);
    assert.equal(pet.body.name, 'Polly');
    const created = dataOf(
      await gql(t.admin, 'mutation($n: String!, $c: ID!) { createPet(input: {name: $n, categoryId: $c}) { name } }', { n: '\ufeffRex\u200e', c: String(rest.body.id) }),
    );
    assert.equal(created.createPet.name, 'Rex');
    // An emoji sequence keeps its joiner: it is part of the character, not an invisible addition.
    const emoji = await t.admin.post('/v1/categories', { name: 'Team \u{1F469}\u200d\u{1F4BB}' });
    assert.equal(emoji.status, 201, emoji.text);
    assert.equal(emoji.body.name, 'Team \u{1F469}\u200d\u{1F4BB}');
  });

  it('when a category name differs from an existing one only by other invisible characters (U+034F, U+FE0F, Hangul fillers), then it is NAME_TAKEN', async () => {
    const base = `Ferrets ${Math.random()}`;
    assert.equal((await t.admin.post('/v1/categories', { name: base })).status, 201);
    for (const invisible of ['\u034f', '\ufe0f', '\u3164', '\u115f', '\uffa0', '\u180b']) {
      assertError(await t.admin.post('/v1/categories', { name: base + invisible }), 409, 'NAME_TAKEN');
    }
    const heart = await t.admin.post('/v1/categories', { name: 'Loved \u2764\ufe0f' });
    assert.equal(heart.body.name, 'Loved \u2764\ufe0f', 'the emoji presentation selector after a pictograph is kept');
  });

  it('when a name is only format characters, then both facades refuse it with VALIDATION_FAILED', async () => {
    assertError(await t.admin.post('/v1/categories', { name: '\u200b\u2060' }), 400, 'VALIDATION_FAILED');
    assertGraphQLError(await gql(t.admin, 'mutation($n: String!) { createCategory(input: {name: $n}) { id } }', { n: '\u200b\u2060' }), 'VALIDATION_FAILED', 400);
  });
});
