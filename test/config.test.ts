import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../src/config.js';

const refused = (env: Record<string, string>, variable: string) =>
  assert.throws(() => loadConfig(env), (e: unknown) => e instanceof ConfigError && e.message.includes(`${variable}=`), variable);

describe('configuration: an invalid value stops the start with a message naming the variable (SPEC §10)', () => {
  it('when nothing is set, then the embedded default is used', () => {
    const c = loadConfig({});
    assert.equal(c.port, 3000);
    assert.deepEqual(c.database, { kind: 'sqlite', path: './data/petstore.db', url: 'sqlite:./data/petstore.db' });
    assert.equal(c.redisUrl, undefined);
    assert.equal(c.petsGetSunset.toISOString(), '2027-06-30T00:00:00.000Z');
  });

  it('when values are malformed, then each is refused by name', () => {
    refused({ PORT: 'abc' }, 'PORT');
    refused({ PORT: '70000' }, 'PORT');
    refused({ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL');
    refused({ REDIS_URL: 'localhost:6379' }, 'REDIS_URL');
    refused({ NODE_ENV: 'staging' }, 'NODE_ENV');
    refused({ BAN_SECONDS: '-1' }, 'BAN_SECONDS');
    refused({ ADMIN_API_KEY: 'short' }, 'ADMIN_API_KEY');
  });

  it('when PETS_GET_SUNSET names a day that does not exist, then it is refused rather than rolled over', () => {
    refused({ PETS_GET_SUNSET: '2027-02-30' }, 'PETS_GET_SUNSET');
    refused({ PETS_GET_SUNSET: '2027-13-01' }, 'PETS_GET_SUNSET');
    assert.equal(loadConfig({ PETS_GET_SUNSET: '2028-02-29' }).petsGetSunset.toISOString().slice(0, 10), '2028-02-29');
  });

  it('when CORS_ORIGINS is not a list of origins, then it is refused; * and real origins are accepted', () => {
    refused({ CORS_ORIGINS: 'not-a-url' }, 'CORS_ORIGINS');
    refused({ CORS_ORIGINS: 'https://app.example.com/path' }, 'CORS_ORIGINS');
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://a.example.com, http://localhost:5173' }).corsOrigins, ['https://a.example.com', 'http://localhost:5173']);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, ['*']);
  });
});
