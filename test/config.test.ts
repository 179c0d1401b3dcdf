import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, loadConfig, SETTING_NAMES, tracingRequested } from '../src/config.js';
import { startService } from './ops/support.js';

const refused = (env: Record<string, string>, variable: string) =>
  assert.throws(
    () => loadConfig(env),
    (e: unknown) => e instanceof ConfigError && e.message.includes(`${variable}=`),
    variable,
  );

describe('configuration: an invalid value stops the start with a message naming the variable', () => {
  it('when nothing is set, then the embedded default is used', () => {
    const c = loadConfig({});
    assert.equal(c.port, 3000);
    assert.deepEqual(c.database, { kind: 'sqlite', path: './data/petstore.db', url: 'sqlite:./data/petstore.db' });
    assert.equal(c.redisUrl, undefined);
    assert.equal(c.petsGetSunset.toISOString(), '2027-06-30T00:00:00.000Z');
    assert.equal(c.graphqlExecutor, 'jit');
    assert.equal(loadConfig({ GRAPHQL_EXECUTOR: 'graphql-js' }).graphqlExecutor, 'graphql-js');
  });

  it('when values are malformed, then each is refused by name', () => {
    refused({ PORT: 'abc' }, 'PORT');
    refused({ PORT: '70000' }, 'PORT');
    refused({ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL');
    refused({ REDIS_URL: 'localhost:6379' }, 'REDIS_URL');
    refused({ NODE_ENV: 'staging' }, 'NODE_ENV');
    refused({ BAN_SECONDS: '-1' }, 'BAN_SECONDS');
    refused({ ADMIN_API_KEY: 'short' }, 'ADMIN_API_KEY');
    refused({ GRAPHQL_EXECUTOR: 'fast' }, 'GRAPHQL_EXECUTOR');
  });

  it('when REDIS_COMMAND_TIMEOUT_MS is unset it is 500 ms; 0, a fraction or more than a minute is refused', () => {
    assert.equal(loadConfig({}).redisCommandTimeoutMs, 500);
    assert.equal(loadConfig({ REDIS_COMMAND_TIMEOUT_MS: '5000' }).redisCommandTimeoutMs, 5000);
    for (const value of ['0', '9', '1.5', 'abc', '60001']) refused({ REDIS_COMMAND_TIMEOUT_MS: value }, 'REDIS_COMMAND_TIMEOUT_MS');
  });

  it('when PETS_GET_SUNSET names a day that does not exist, then it is refused rather than rolled over', () => {
    refused({ PETS_GET_SUNSET: '2027-02-30' }, 'PETS_GET_SUNSET');
    refused({ PETS_GET_SUNSET: '2027-13-01' }, 'PETS_GET_SUNSET');
    assert.equal(loadConfig({ PETS_GET_SUNSET: '2028-02-29' }).petsGetSunset.toISOString().slice(0, 10), '2028-02-29');
  });

  it('when CORS_ORIGINS is not a list of origins, then it is refused; * and real origins are accepted', () => {
    refused({ CORS_ORIGINS: 'not-a-url' }, 'CORS_ORIGINS');
    refused({ CORS_ORIGINS: 'https://app.example.com/path' }, 'CORS_ORIGINS');
    assert.deepEqual(loadConfig({ CORS_ORIGINS: 'https://a.example.com, http://localhost:5173' }).corsOrigins, [
      'https://a.example.com',
      'http://localhost:5173',
    ]);
    assert.deepEqual(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins, ['*']);
  });

  it('when TRUST_PROXY is true or not a number of hops or a list of proxies, then it is refused with what to give instead', () => {
    const message = (env: Record<string, string>) => {
      try {
        loadConfig(env);
      } catch (e) {
        if (e instanceof ConfigError) return e.message;
      }
      return '';
    };
    for (const value of ['true', 'yes', 'banana', '10.0.0.0/99', '10.0.0.1,', '1.5', '33']) refused({ TRUST_PROXY: value }, 'TRUST_PROXY');
    assert.match(message({ TRUST_PROXY: 'true' }), /TRUST_PROXY="true": .*number of proxy hops.*CIDR list/);
    assert.match(message({ TRUST_PROXY: 'banana' }), /not an address or range: "banana"/);
    assert.equal(loadConfig({}).trustProxy, null);
    assert.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, null);
    assert.deepEqual(loadConfig({ TRUST_PROXY: '1' }).trustProxy, { hops: 1 });
    assert.deepEqual(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1' }).trustProxy, { proxies: ['10.0.0.0/8', '127.0.0.1', '::1'] });
    assert.deepEqual(loadConfig({ TRUST_PROXY: 'loopback' }).trustProxy, { proxies: ['loopback'] });
  });

  it("when ADMIN_API_KEY's characters after psk_ score under 100 bits, then it is refused; a generated key is accepted", () => {
    refused({ ADMIN_API_KEY: `psk_${'A'.repeat(32)}` }, 'ADMIN_API_KEY');
    refused({ ADMIN_API_KEY: `psk_${'abcd'.repeat(10)}` }, 'ADMIN_API_KEY');
    refused({ ADMIN_API_KEY: 'psk_password1234567890123' }, 'ADMIN_API_KEY');
    // 22 random characters are 132 bits at best; a key must be as long as a generated one.
    refused({ ADMIN_API_KEY: `psk_${randomBytes(16).toString('base64url')}` }, 'ADMIN_API_KEY');
    assert.throws(() => loadConfig({ ADMIN_API_KEY: `psk_${'A'.repeat(32)}` }), /score under 100 bits/);
    // Random keys are never refused (the old threshold refused about 1 generated key in 7,000).
    for (let i = 0; i < 20_000; i++) {
      const key = `psk_${randomBytes(24).toString('base64url')}`;
      assert.doesNotThrow(() => loadConfig({ ADMIN_API_KEY: key }), key);
    }
  });
});

describe('configuration: traces are off unless the OTEL_* variables ask for them', () => {
  it('when OTEL_EXPORTER_OTLP_ENDPOINT, its traces variant or OTEL_TRACES_EXPORTER is set, then traces are requested; none or OTEL_SDK_DISABLED=true win', () => {
    assert.equal(tracingRequested({}), false);
    assert.equal(tracingRequested({ OTEL_SERVICE_NAME: 'petstore', OTEL_TRACES_SAMPLER: 'always_on' }), false);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
    assert.equal(tracingRequested({ OTEL_TRACES_EXPORTER: 'otlp' }), true);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }), false);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }), false);
    assert.equal(tracingRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }), false);
    assert.equal(loadConfig({}).traces, false);
    assert.equal(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).traces, true);
  });

  /** The files the real service had loaded through the CommonJS loader (the SDK's packages are CommonJS) when it exited. */
  async function loadedFiles(env: Record<string, string>): Promise<string[]> {
    const dir = mkdtempSync(join(tmpdir(), 'petstore-loaded-'));
    const out = join(dir, 'loaded.json');
    const preload = join(dir, 'dump-loaded.mjs');
    writeFileSync(
      preload,
      `import Module from 'node:module';\nimport { writeFileSync } from 'node:fs';\nprocess.on('exit', () => writeFileSync(${JSON.stringify(out)}, JSON.stringify(Object.keys(Module._cache))));\n`,
    );
    const s = await startService({ ...env, NODE_OPTIONS: `--import=${pathToFileURL(preload).href}` });
    try {
      assert.equal((await fetch(`${s.url}/v1/pets`, { headers: { 'x-api-key': s.key } })).status, 200);
      s.child.kill('SIGTERM');
      assert.equal(await s.exited, 0);
      return JSON.parse(readFileSync(out, 'utf8')) as string[];
    } finally {
      s.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('when no OTEL_* variable is set, then the service loads no OpenTelemetry SDK, exporter or instrumentation module; with an endpoint it does', async () => {
    const sdkFile = (f: string) => /[\\/]@opentelemetry[\\/](sdk-|exporter-|instrumentation|otlp-|resources)/.test(f);
    const off = await loadedFiles({});
    assert.ok(
      off.some((f) => /[\\/]node_modules[\\/]koa[\\/]/.test(f)),
      'the dump lists the loaded files',
    );
    assert.deepEqual(off.filter(sdkFile), []);
    const on = await loadedFiles({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
    assert.ok(
      on.some((f) => /[\\/]@opentelemetry[\\/]sdk-node[\\/]/.test(f)),
      'with an endpoint the SDK is loaded',
    );
  });
});

describe("docs/CONFIGURATION.md's table is the reference of every setting", () => {
  /** The table's rows: variable, default and accepted values, as written. */
  const rows = [...readFileSync('docs/CONFIGURATION.md', 'utf8').matchAll(/^\| `([A-Z_]+)` \| ([^|]*) \| ([^|]*) \|/gm)].map(
    ([, name, byDefault, values]) => ({ name: name!, byDefault: byDefault!.trim(), values: values!.trim() }),
  );

  it("when the service reads a variable, then the table lists it once, and lists no variable the service does not read (but the OpenTelemetry SDK's)", () => {
    const listed = rows.map((r) => r.name);
    assert.equal(new Set(listed).size, listed.length, 'each variable once');
    assert.deepEqual(listed.filter((n) => !n.startsWith('OTEL_')).sort(), [...SETTING_NAMES].sort());
  });

  it('when a whole-number setting is given the ends of its documented range, then both start; one past either end is refused by name; its documented default starts too', () => {
    const ranged = rows.filter((r) => /^`\d+`–`\d+`$/.test(r.values));
    assert.ok(ranged.length >= 30, `the ranges are in the table (${ranged.length})`);
    // A setting bounded by another: its ends are tried with the other at its widest.
    const beside: Record<string, Record<string, string>> = { HEADERS_TIMEOUT_MS: { REQUEST_TIMEOUT_MS: '0' } };
    for (const { name, byDefault, values } of ranged) {
      const [min, max] = values.match(/\d+/g)!.map(Number) as [number, number];
      const env = (value: number) => ({ ...beside[name], [name]: String(value) });
      for (const value of [min, max]) {
        assert.doesNotThrow(() => loadConfig(env(value)), `${name}=${value} is documented as allowed`);
      }
      refused(env(max + 1), name);
      if (min > 0) refused(env(min - 1), name);
      const documented = /^`(\d+)`$/.exec(byDefault)?.[1];
      assert.ok(documented, `${name}'s default is a number`);
      assert.doesNotThrow(() => loadConfig({ ...beside[name], [name]: documented }), `${name}'s default`);
    }
  });
});
