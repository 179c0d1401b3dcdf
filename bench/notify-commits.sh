#!/usr/bin/env bash
# What a NOTIFY inside a writing transaction costs PostgreSQL's commit rate (docs/DECISIONS.md, "No writing
# transaction NOTIFYs"): pgbench, one insert per transaction, without and with pg_notify, in turns.
#   PG_URL=postgres://postgres@127.0.0.1:5432/test bash bench/notify-commits.sh [clients] [seconds] [turns]
# Needs pgbench (Debian: postgresql-client). Works in a table of its own, dropped at the end.
set -euo pipefail
url=${PG_URL:?set PG_URL, e.g. postgres://postgres@127.0.0.1:5432/test}
clients=${1:-10}; seconds=${2:-5}; turns=${3:-2}
dir=$(mktemp -d)
trap 'psql -q "$url" -c "drop table if exists petstore_notify_bench" >/dev/null; rm -rf "$dir"' EXIT
psql -q "$url" -c "drop table if exists petstore_notify_bench; create table petstore_notify_bench (id bigserial primary key, v int)"
echo "insert into petstore_notify_bench (v) values (1);" > "$dir/plain.sql"
echo "insert into petstore_notify_bench (v) values (1) returning (select pg_notify('petstore_bench', ''))::text;" > "$dir/notify.sql"
for turn in $(seq "$turns"); do
  for script in plain notify; do
    tps=$(pgbench "$url" -n -c "$clients" -j 2 -T "$seconds" -f "$dir/$script.sql" 2>/dev/null | awk '/^tps/ {print int($3)}')
    echo "turn $turn, $script: $tps transactions/s over $clients clients"
  done
done
