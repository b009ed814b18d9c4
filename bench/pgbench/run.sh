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
# transaction (bench/lib.sh).
#
# OP=NAME runs one transaction alone on both sides instead of Table 2's mix:
# CreateAccount, UpdateAccount, QueryById, QueryByCode, GetHoldingStatement
# (pgbench its script, tierbench --mix NAME=1) or BuySell (buy_sell.sql,
# tierbench --mix BuyStock=1,SellStock=1), to see which transactions make the gap.
set -euo pipefail
cd "$(dirname "$0")/../.."

DSN=${DSN:-postgres://root@127.0.0.1:5432/test}
CLIENTS=${CLIENTS:-10}
SECS=${SECONDS_PER_RUN:-30}
SCALE=${SCALE:-1}
ROUNDS=${ROUNDS:-1}
BIN=${BIN:-./bin/tierbench}
SWITCHES=${SWITCHES:-0}

. bench/lib.sh
need_pgbench
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/tierbench
scripts=bench/pgbench/stockonline
accounts=$((3000 * SCALE)); items=$((3000 * SCALE))

# Weights are scripts per 40: 1+1+15+15+5 single transactions and 3
# buy-sell scripts of two transactions each make Table 2's 43.
pg_scripts=(-f $scripts/create_account.sql@1 -f $scripts/update_account.sql@1
  -f $scripts/query_by_id.sql@15 -f $scripts/query_by_code.sql@15
  -f $scripts/holding_statement.sql@5 -f $scripts/buy_sell.sql@3)
tb_mix=table-2
OP=${OP:-}
case "$OP" in
  "") ;;
  CreateAccount) pg_scripts=(-f $scripts/create_account.sql); tb_mix=CreateAccount=1 ;;
  UpdateAccount) pg_scripts=(-f $scripts/update_account.sql); tb_mix=UpdateAccount=1 ;;
  QueryById) pg_scripts=(-f $scripts/query_by_id.sql); tb_mix=QueryById=1 ;;
  QueryByCode) pg_scripts=(-f $scripts/query_by_code.sql); tb_mix=QueryByCode=1 ;;
  GetHoldingStatement) pg_scripts=(-f $scripts/holding_statement.sql); tb_mix=GetHoldingStatement=1 ;;
  BuySell) pg_scripts=(-f $scripts/buy_sell.sql); tb_mix=BuyStock=1,SellStock=1 ;;
  *) echo "OP=$OP: want one of CreateAccount, UpdateAccount, QueryById, QueryByCode, GetHoldingStatement, BuySell (or none: Table 2's mix)" >&2; exit 2 ;;
esac

# Each side runs on a fresh population after a CHECKPOINT, so neither pays
# for the other's dirty pages; the order alternates between rounds.
fresh() {
  "$BIN" load stockonline --db "$DSN" --scale "$SCALE" >/dev/null
  psql "$DSN" -qc CHECKPOINT
}

run_pgbench() {
  fresh
  local out log
  log=$(mktemp)
  measure "$log" pgbench "$DSN" -n -M prepared -c "$CLIENTS" -j 2 -T "$SECS" --random-seed=1 \
      -D accounts=$accounts -D items=$items "${pg_scripts[@]}"
  out=$(cat "$log"); rm -f "$log"
  # Per script: "SQL script N: path" then " - C transactions (…, tps = R)";
  # with one script, only "tps = R".
  if [ -n "$OP" ]; then
    pg_tps=$(echo "$out" | awk -v per=$([ "$OP" = BuySell ] && echo 2 || echo 1) '/^tps = / { printf "%.1f", per * $3 }')
  else pg_tps=$(echo "$out" | awk '
    /^SQL script [0-9]+:/ { per = ($0 ~ /buy_sell/) ? 2 : 1 }
    /^ - [0-9]+ transactions .*tps = / { match($0, /tps = [0-9.]+/); sum += per * substr($0, RSTART + 6, RLENGTH - 6) }
    END { printf "%.1f", sum }')
  fi
  pg_failed=$(echo "$out" | awk '/^number of failed transactions/ { print $5; exit }')
}

run_tierbench() {
  fresh
  local log
  log=$(mktemp)
  measure "$log" "$BIN" run stockonline --db "$DSN" --persistence direct --no-load --scale "$SCALE" --clients "$CLIENTS" \
      --server-threads "$CLIENTS" --duration "${SECS}s" --mix "$tb_mix" --quiet --out /tmp/tierbench-vs-pgbench.json
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
  printf 'round %d: clients %d, %ss, %s: pgbench %s TPS (%s failed), tierbench direct %s TPS, ratio %s\n' \
      "$round" "$CLIENTS" "$SECS" "${OP:-Table 2 mix}" "$pg_tps" "${pg_failed:-0}" "$tb_tps" "$ratio"
  if [ "$SWITCHES" = 1 ]; then printf '  client per transaction: pgbench %s, tierbench %s\n' "$pg_sw" "$tb_sw"; fi
done
# Rounds on a shared 2-core machine spread by ±10%; the median is the figure.
printf 'median ratio over %d rounds: %s\n' "${#ratios[@]}" "$(median "${ratios[@]}")"
