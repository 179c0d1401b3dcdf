/**
 * Names are compared and stored in one normal form (NFC, no invisible format characters, trimmed), in
 * the domain, so both facades apply the same uniqueness rule: "Dogs\u200b" is "Dogs". A name shows at least
 * one visible character and holds no control character, and category names are unique by case folding
 * (Straße = STRASSE), the same on SQLite and PostgreSQL.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApp, type TestApp } from '../helpers/app.js';
import { globalId } from '../../src/graphql/global-id.js';
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
      assertGraphQLError(
        await gql(t.admin, 'mutation($n: String!) { createCategory(input: {name: $n}) { id } }', { n }),
        'NAME_TAKEN',
        409,
      );
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
      await gql(t.admin, 'mutation($n: String!, $c: ID!) { createPet(input: {name: $n, categoryId: $c}) { name } }', {
        n: '\ufeffRex\u200e',
        c: globalId('Category', rest.body.id),
      }),
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
    assertGraphQLError(
      await gql(t.admin, 'mutation($n: String!) { createCategory(input: {name: $n}) { id } }', { n: '\u200b\u2060' }),
      'VALIDATION_FAILED',
      400,
    );
  });
});

const CREATE_CATEGORY = 'mutation($n: String!) { createCategory(input: {name: $n}) { id name } }';

describe('names: visible, without control characters, unique by case folding', () => {
  let t: TestApp;
  let categoryId: number;
  before(async () => {
    t = await startApp();
    categoryId = (await t.admin.post('/v1/categories', { name: 'Names' })).body.id;
  });
  after(() => t.close());

  const BLANK = ['\u2800', '\u2800\u2800 \u2800', '\u3000\u2800', ' \u0301 '];
  const CONTROL = ['Rex\u0007', 'Re\nx', 'Re\tx', 'Rex\u001b[31m', 'Re\u0085x', 'Re\u007fx', 'Re\u2028x', 'Re\u2029x'];

  it('when a name has no visible character (the Braille blank, white space, a lone combining mark), then both facades refuse it and nothing is stored', async () => {
    const before = (await t.admin.get('/v1/categories?limit=100')).body.length;
    for (const name of BLANK) {
      const rest = await t.admin.post('/v1/categories', { name });
      assertError(rest, 400, 'VALIDATION_FAILED');
      assert.equal(rest.body.details[0].path, 'name');
      assertError(await t.admin.post('/v1/pets', { name, categoryId }), 400, 'VALIDATION_FAILED');
      assertError(await t.admin.post('/v1/accounts', { name, role: 'customer', plan: 'free' }), 400, 'VALIDATION_FAILED');
      assertGraphQLError(await gql(t.admin, CREATE_CATEGORY, { n: name }), 'VALIDATION_FAILED', 400);
    }
    const braille = await t.admin.post('/v1/categories', { name: '\u2800' });
    assert.equal(braille.body.message, 'name must contain at least one visible character.');
    assert.equal((await t.admin.get('/v1/categories?limit=100')).body.length, before);
  });

  it('when a name holds a control character (BEL, a line break, U+2028 or U+2029, a tab, an escape), then both facades refuse it with a clear message', async () => {
    for (const name of CONTROL) {
      const rest = await t.admin.post('/v1/categories', { name });
      assertError(rest, 400, 'VALIDATION_FAILED');
      assert.equal(rest.body.message, 'name must not contain control characters (line breaks, tabs, BEL …).');
      assertError(await t.admin.post('/v1/pets', { name, categoryId }), 400, 'VALIDATION_FAILED');
      assertError(await t.admin.post('/v1/accounts', { name, role: 'customer', plan: 'free' }), 400, 'VALIDATION_FAILED');
      const pet = (await t.admin.post('/v1/pets', { name: 'Fine', categoryId })).body.id;
      assertError(await t.admin.put(`/v1/pets/${pet}`, { name, categoryId }), 400, 'VALIDATION_FAILED');
      const error = assertGraphQLError(await gql(t.admin, CREATE_CATEGORY, { n: name }), 'VALIDATION_FAILED', 400);
      assert.ok(error);
      assertGraphQLError(
        await gql(t.admin, 'mutation($n: String!, $c: ID!) { createPet(input: {name: $n, categoryId: $c}) { id } }', {
          n: name,
          c: globalId('Category', categoryId),
        }),
        'VALIDATION_FAILED',
        400,
      );
    }
    // Visible text around white space inside the name is still a name; a Braille pattern with dots is visible.
    for (const name of ['Rex the Second', '\u2801 Dots']) assert.equal((await t.admin.post('/v1/categories', { name })).status, 201, name);
  });

  it('when category names differ only by case under Unicode case folding (Straße/STRASSE, İstanbul/istanbul), then the second is NAME_TAKEN on both facades', async () => {
    for (const [first, second] of [
      ['Straße', 'STRASSE'],
      ['istanbul', 'İstanbul'],
      ['ǅemal', 'ǆEMAL'],
      ['Σίσυφος', 'ΣΊΣΥΦΟΣ'],
    ]) {
      const created = await t.admin.post('/v1/categories', { name: first });
      assert.equal(created.status, 201, created.text);
      assertError(await t.admin.post('/v1/categories', { name: second }), 409, 'NAME_TAKEN');
      assertGraphQLError(await gql(t.admin, CREATE_CATEGORY, { n: second }), 'NAME_TAKEN', 409);
      // Renaming another category to it is refused too, and renaming the category itself to another case is not.
      const other = (await t.admin.post('/v1/categories', { name: `Other ${first}` })).body.id;
      assertError(await t.admin.put(`/v1/categories/${other}`, { name: second }), 409, 'NAME_TAKEN');
      const renamed = await t.admin.put(`/v1/categories/${created.body.id}`, { name: second });
      assert.equal(renamed.status, 200, renamed.text);
      assert.equal(renamed.body.name, second);
    }
    // The reverse order collides too.
    assert.equal((await t.admin.post('/v1/categories', { name: 'STRASSENBAHN' })).status, 201);
    assertError(await t.admin.post('/v1/categories', { name: 'Straßenbahn' }), 409, 'NAME_TAKEN');
    assert.equal((await t.admin.post('/v1/categories', { name: 'ß'.repeat(100) })).status, 201, 'a name whose folded key is twice as long');
  });
});
