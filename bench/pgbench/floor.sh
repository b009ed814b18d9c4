#!/usr/bin/env bash
# The Go floor: pgbench against the least a Go client can do (bench/pgbench/floor,
# pgconn and nothing else), both running one Stock-Online script alone (SCRIPT,
# default query_by_id.sql; any of bench/pgbench/stockonline/ but buy_sell.sql),
# same clients, same database, same length. Their ratio is what a Go client
# loses to libpq on this machine before any of tierbench's own work; compare it
# with `make bench-pgbench`'s ratio (docs/performance.md). Used by `make bench-pgfloor`.
#
#   DSN=postgres://root@127.0.0.1:5432/test CLIENTS=10 SECONDS_PER_RUN=20 ROUNDS=4 SCRIPT=update_account.sql bench/pgbench/floor.sh
#
# SWITCHES=1 also counts each client's context switches and CPU per
# transaction with perf stat, for the middle half of its run (bench/lib.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

DSN=${DSN:-postgres://root@127.0.0.1:5432/test}
CLIENTS=${CLIENTS:-10}
SECS=${SECONDS_PER_RUN:-20}
SCALE=${SCALE:-1}
ROUNDS=${ROUNDS:-1}
BIN=${BIN:-./bin/tierbench}
SWITCHES=${SWITCHES:-0}
SCRIPT=${SCRIPT:-query_by_id.sql}
script=bench/pgbench/stockonline/$SCRIPT
if [ ! -f "$script" ] || [ "$SCRIPT" = buy_sell.sql ]; then
  echo "SCRIPT=$SCRIPT: want one of $(cd bench/pgbench/stockonline && ls *.sql | grep -v buy_sell | tr '\n' ' ')(buy_sell.sql has branches the floor does not run)" >&2
  exit 2
fi

. bench/lib.sh
need_pgbench
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/tierbench
floor=$(mktemp -d)/floor
trap 'rm -rf "$(dirname "$floor")"' EXIT
go build -o "$floor" ./bench/pgbench/floor
items=$((3000 * SCALE)); accounts=$((3000 * SCALE))

# Each run on a freshly loaded population (the writing scripts change it),
# after a CHECKPOINT, as bench/pgbench/run.sh does.
fresh() {
  "$BIN" load stockonline --db "$DSN" --scale "$SCALE" >/dev/null
  psql "$DSN" -qc CHECKPOINT
}

run_pgbench() {
  fresh
  local log
  log=$(mktemp)
  measure "$log" pgbench "$DSN" -n -M prepared -c "$CLIENTS" -j 2 -T "$SECS" --random-seed=1 \
      -D items=$items -D accounts=$accounts -f "$script"
  pg_tps=$(awk '/^tps = / { printf "%.1f", $3 }' "$log"); rm -f "$log"
}

run_floor() {
  fresh
  local log
  log=$(mktemp)
  measure "$log" "$floor" -dsn "$DSN" -clients "$CLIENTS" -duration "${SECS}s" -items "$items" -accounts "$accounts" \
      -script "$script"
  go_tps=$(cat "$log"); rm -f "$log"
}

ratios=()
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    run_pgbench; pg_sw=$(per_tx "$pg_tps")
    run_floor; go_sw=$(per_tx "$go_tps")
  else
    run_floor; go_sw=$(per_tx "$go_tps")
    run_pgbench; pg_sw=$(per_tx "$pg_tps")
  fi
  ratio=$(awk -v a="$go_tps" -v b="$pg_tps" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$ratio")
  printf 'round %d: clients %d, %ss, %s: pgbench %s TPS, Go floor (pgconn) %s TPS, ratio %s\n' \
      "$round" "$CLIENTS" "$SECS" "${SCRIPT%.sql}" "$pg_tps" "$go_tps" "$ratio"
  if [ "$SWITCHES" = 1 ]; then printf '  client per transaction: pgbench %s, Go floor %s\n' "$pg_sw" "$go_sw"; fi
done
printf 'median ratio over %d rounds: %s\n' "${#ratios[@]}" "$(median "${ratios[@]}")"
