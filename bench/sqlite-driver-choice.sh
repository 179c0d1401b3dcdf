#!/usr/bin/env bash
# How the SQLite driver was chosen (docs/DEVELOPMENT.md, "Why libsql"): install time from an empty npm cache-less
# project, and ORM round trips per second, for @mikro-orm/libsql and @mikro-orm/better-sqlite.
# Usage: bash bench/sqlite-driver-choice.sh   (takes ~3 minutes; better-sqlite compiles SQLite)
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for driver in libsql better-sqlite; do
  dir="$work/$driver"
  mkdir -p "$dir" && cd "$dir"
  echo '{"name":"probe","type":"module","private":true}' > package.json
  start=$(date +%s.%N)
  npm i --no-audit --no-fund --cache "$work/cache-$driver" -E "@mikro-orm/core@6.6.16" "@mikro-orm/$driver@6.6.16" >/dev/null 2>&1
  end=$(date +%s.%N)
  # Same probe for both: 20,000 primary-key reads and 2,000 single-row transactions.
  cat > probe.mjs <<JS
import { MikroORM, EntitySchema } from '@mikro-orm/core';
import * as mod from '@mikro-orm/$driver';
const Driver = mod.LibSqlDriver ?? mod.BetterSqliteDriver;
const Pet = new EntitySchema({ name: 'Pet', properties: { id: { type: 'number', primary: true }, name: { type: 'string' }, stock: { type: 'number' } } });
const orm = await MikroORM.init({ driver: Driver, dbName: '$dir/probe.db', entities: [Pet], debug: false });
await orm.schema.createSchema();
const em = orm.em.fork();
for (let i = 1; i <= 100; i++) em.persist(em.create(Pet, { id: i, name: 'p' + i, stock: 1000000 }));
await em.flush();
let t = performance.now();
for (let i = 0; i < 20000; i++) await orm.em.fork().findOne(Pet, { id: (i % 100) + 1 });
const reads = 20000 / ((performance.now() - t) / 1000);
t = performance.now();
for (let i = 0; i < 2000; i++) await orm.em.fork().transactional((tem) => tem.nativeUpdate(Pet, { id: (i % 100) + 1 }, { stock: 999 }));
const writes = 2000 / ((performance.now() - t) / 1000);
console.log(JSON.stringify({ reads: Math.round(reads), writes: Math.round(writes) }));
await orm.close();
JS
  result=$(node probe.mjs)
  printf '%-14s install %6.1fs  %s\n' "$driver" "$(echo "$end - $start" | bc)" "$result"
done
