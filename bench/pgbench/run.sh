#!/usr/bin/env bash
# Stock-Online on PostgreSQL: pgbench issuing tierbench's direct-SQL
# statements versus tierbench itself, same clients, same database, same
# length. Prints both rates in Stock-Online transactions per second and
# their ratio. Used by `make bench-pgbench`; see docs/performance.md.
#
#   DSN=postgres://root@127.0.0.1:5432/test CLIENTS=10 SECONDS=30 bench/pgbench/run.sh
#
# SWITCHES=1 also counts, with perf stat attached to each client process for
# the middle half of its run, the client's context switches and CPU time per
# transaction (perf must be allowed to attach: perf_event_paranoid <= 2 for
# one's own processes).
set -euo pipefail
cd "$(dirname "$0")/../.."

DSN=${DSN:-postgres://root@127.0.0.1:5432/test}
CLIENTS=${CLIENTS:-10}
SECS=${SECONDS_PER_RUN:-30}
SCALE=${SCALE:-1}
ROUNDS=${ROUNDS:-1}
BIN=${BIN:-./bin/tierbench}
SWITCHES=${SWITCHES:-0}

command -v pgbench >/dev/null || { echo "pgbench not found (Debian: postgresql-client)" >&2; exit 3; }
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/tierbench

command -v psql >/dev/null || { echo "psql not found (Debian: postgresql-client)" >&2; exit 3; }
if [ "$SWITCHES" = 1 ]; then
  command -v perf >/dev/null || { echo "SWITCHES=1 needs perf (Debian: linux-perf)" >&2; exit 3; }
  [ "$SECS" -ge 8 ] || { echo "SWITCHES=1 needs SECONDS_PER_RUN of at least 8 (it counts the middle half)" >&2; exit 2; }
fi
scripts=bench/pgbench/stockonline
accounts=$((3000 * SCALE)); items=$((3000 * SCALE))

# Each side runs on a fresh population after a CHECKPOINT, so neither pays
# for the other's dirty pages; the order alternates between rounds.
fresh() {
  "$BIN" load stockonline --db "$DSN" --scale "$SCALE" >/dev/null
  psql "$DSN" -qc CHECKPOINT
}

# count_switches PID: perf stat on PID's threads for the middle half of a
# run of SECS seconds; sets sw (context switches) and cpu_ms (task clock).
# Only the steady state is counted, not connecting, loading or checking.
count_switches() {
  local pid=$1 stat
  sleep $((SECS / 4))
  stat=$(perf stat -x, -e context-switches,task-clock -p "$pid" -- sleep $((SECS / 2)) 2>&1 >/dev/null)
  sw=$(echo "$stat" | awk -F, '$3 == "context-switches" { print $1 }')
  cpu_ms=$(echo "$stat" | awk -F, '$3 == "task-clock" { print $1 }')
}

# per_tx RATE: switches and client CPU µs per transaction in the counted window.
per_tx() {
  [ "$SWITCHES" = 1 ] || return 0
  awk -v sw="$sw" -v ms="$cpu_ms" -v tps="$1" -v secs=$((SECS / 2)) \
    'BEGIN { n = tps * secs; printf "%.2f switches, %.1f µs CPU", sw / n, ms * 1000 / n }'
}

run_pgbench() {
  fresh
  # Weights are scripts per 40: 1+1+15+15+5 single transactions and 3
  # buy-sell scripts of two transactions each make Table 2's 43.
  local out log pid
  log=$(mktemp)
  pgbench "$DSN" -n -M prepared -c "$CLIENTS" -j 2 -T "$SECS" --random-seed=1 \
      -D accounts=$accounts -D items=$items \
      -f $scripts/create_account.sql@1 -f $scripts/update_account.sql@1 \
      -f $scripts/query_by_id.sql@15 -f $scripts/query_by_code.sql@15 \
      -f $scripts/holding_statement.sql@5 -f $scripts/buy_sell.sql@3 >"$log" 2>&1 &
  pid=$!
  if [ "$SWITCHES" = 1 ]; then count_switches "$pid"; fi
  wait "$pid" || { cat "$log" >&2; rm -f "$log"; exit 3; }
  out=$(cat "$log"); rm -f "$log"
  # Per script: "SQL script N: path" then " - C transactions (…, tps = R)".
  pg_tps=$(echo "$out" | awk '
    /^SQL script [0-9]+:/ { per = ($0 ~ /buy_sell/) ? 2 : 1 }
    /^ - [0-9]+ transactions .*tps = / { match($0, /tps = [0-9.]+/); sum += per * substr($0, RSTART + 6, RLENGTH - 6) }
    END { printf "%.1f", sum }')
  pg_failed=$(echo "$out" | awk '/^number of failed transactions/ { print $5; exit }')
}

run_tierbench() {
  fresh
  local log pid
  log=$(mktemp)
  "$BIN" run stockonline --db "$DSN" --persistence direct --no-load --scale "$SCALE" --clients "$CLIENTS" \
      --server-threads "$CLIENTS" --duration "${SECS}s" --quiet --out /tmp/tierbench-vs-pgbench.json >"$log" 2>&1 &
  pid=$!
  if [ "$SWITCHES" = 1 ]; then count_switches "$pid"; fi
  wait "$pid" || { cat "$log" >&2; rm -f "$log"; exit 3; }
  tb_tps=$(awk '/^TPS / { print $2 }' "$log"); rm -f "$log"
}

ratios=()
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    run_pgbench; pg_sw=$(per_tx "$pg_tps")
    run_tierbench; tb_sw=$(per_tx "$tb_tps")
  else
    run_tierbench; tb_sw=$(per_tx "$tb_tps")
    run_pgbench; pg_sw=$(per_tx "$pg_tps")
  fi
  ratio=$(awk -v a="$tb_tps" -v b="$pg_tps" 'BEGIN { printf "%.3f", a / b }')
  ratios+=("$ratio")
  printf 'round %d: clients %d, %ss: pgbench %s TPS (%s failed), tierbench direct %s TPS, ratio %s\n' \
      "$round" "$CLIENTS" "$SECS" "$pg_tps" "${pg_failed:-0}" "$tb_tps" "$ratio"
  if [ "$SWITCHES" = 1 ]; then printf '  client per transaction: pgbench %s, tierbench %s\n' "$pg_sw" "$tb_sw"; fi
done
# Rounds on a shared 2-core machine spread by ±10%; the median is the figure.
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ r[NR] = $1 } END { m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2; printf "median ratio over %d rounds: %.3f\n", NR, m }' 
