#!/usr/bin/env bash
# The Go floor: pgbench against the least a Go client can do (bench/pgbench/floor,
# pgconn and nothing else), both running Stock-Online's QueryById alone, same
# clients, same database, same length. Their ratio is what a Go client loses
# to libpq on this machine before any of tierbench's own work; compare it with
# `make bench-pgbench`'s ratio (docs/performance.md). Used by `make bench-pgfloor`.
#
#   DSN=postgres://root@127.0.0.1:5432/test CLIENTS=10 SECONDS_PER_RUN=20 ROUNDS=4 bench/pgbench/floor.sh
#
# SWITCHES=1 also counts each client's context switches and CPU per
# transaction with perf stat, for the middle half of its run.
set -euo pipefail
cd "$(dirname "$0")/../.."

DSN=${DSN:-postgres://root@127.0.0.1:5432/test}
CLIENTS=${CLIENTS:-10}
SECS=${SECONDS_PER_RUN:-20}
SCALE=${SCALE:-1}
ROUNDS=${ROUNDS:-1}
BIN=${BIN:-./bin/tierbench}
SWITCHES=${SWITCHES:-0}

command -v pgbench >/dev/null || { echo "pgbench not found (Debian: postgresql-client)" >&2; exit 3; }
command -v psql >/dev/null || { echo "psql not found (Debian: postgresql-client)" >&2; exit 3; }
if [ "$SWITCHES" = 1 ]; then
  command -v perf >/dev/null || { echo "SWITCHES=1 needs perf (Debian: linux-perf)" >&2; exit 3; }
  [ "$SECS" -ge 8 ] || { echo "SWITCHES=1 needs SECONDS_PER_RUN of at least 8 (it counts the middle half)" >&2; exit 2; }
fi
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/tierbench
floor=$(mktemp -d)/floor
trap 'rm -rf "$(dirname "$floor")"' EXIT
go build -o "$floor" ./bench/pgbench/floor
items=$((3000 * SCALE))

# QueryById only reads: one population serves every run.
"$BIN" load stockonline --db "$DSN" --scale "$SCALE" >/dev/null

count_switches() {
  local pid=$1 stat
  sleep $((SECS / 4))
  stat=$(perf stat -x, -e context-switches,task-clock -p "$pid" -- sleep $((SECS / 2)) 2>&1 >/dev/null)
  sw=$(echo "$stat" | awk -F, '$3 == "context-switches" { print $1 }')
  cpu_ms=$(echo "$stat" | awk -F, '$3 == "task-clock" { print $1 }')
}

per_tx() {
  [ "$SWITCHES" = 1 ] || return 0
  awk -v sw="$sw" -v ms="$cpu_ms" -v tps="$1" -v secs=$((SECS / 2)) \
    'BEGIN { n = tps * secs; printf "%.2f switches, %.1f µs CPU", sw / n, ms * 1000 / n }'
}

run_pgbench() {
  psql "$DSN" -qc CHECKPOINT
  local log pid
  log=$(mktemp)
  pgbench "$DSN" -n -M prepared -c "$CLIENTS" -j 2 -T "$SECS" --random-seed=1 -D items=$items \
      -f bench/pgbench/stockonline/query_by_id.sql >"$log" 2>&1 &
  pid=$!
  if [ "$SWITCHES" = 1 ]; then count_switches "$pid"; fi
  wait "$pid" || { cat "$log" >&2; rm -f "$log"; exit 3; }
  pg_tps=$(awk '/^tps = / { printf "%.1f", $3 }' "$log"); rm -f "$log"
}

run_floor() {
  psql "$DSN" -qc CHECKPOINT
  local log pid
  log=$(mktemp)
  "$floor" -dsn "$DSN" -clients "$CLIENTS" -duration "${SECS}s" -items "$items" -script bench/pgbench/stockonline/query_by_id.sql >"$log" 2>&1 &
  pid=$!
  if [ "$SWITCHES" = 1 ]; then count_switches "$pid"; fi
  wait "$pid" || { cat "$log" >&2; rm -f "$log"; exit 3; }
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
  printf 'round %d: clients %d, %ss, QueryById: pgbench %s TPS, Go floor (pgconn) %s TPS, ratio %s\n' \
      "$round" "$CLIENTS" "$SECS" "$pg_tps" "$go_tps" "$ratio"
  if [ "$SWITCHES" = 1 ]; then printf '  client per transaction: pgbench %s, Go floor %s\n' "$pg_sw" "$go_sw"; fi
done
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END { m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2; printf "median ratio over %d rounds: %.3f\n", NR, m }'
