#!/usr/bin/env bash
# Stock-Online on the entity container against direct SQL, on one
# database, at the paper's client load (100 clients, 10 server threads;
# CLIENTS sets another):
#   direct       hand-written SQL
#   C-cmp        commit option C, CMP, database concurrency (cache 0, pool 20%)
#   A-exclusive  commit option A, CMP, exclusive concurrency, cache 100%,
#                pool 20%, warmed
# Rounds rotate the order; each run repopulates the database. Prints each
# round's TPS and ratios to direct, then the median ratios. Used by
# `make bench-container`; see docs/performance.md.
#
#   DSN=postgres://root@127.0.0.1:5432/test ROUNDS=5 ITERATIONS=40 CLIENTS=100 bench/container/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

DSN=${DSN:-postgres://root@127.0.0.1:5432/test}
ROUNDS=${ROUNDS:-3}
ITERATIONS=${ITERATIONS:-40}
CLIENTS=${CLIENTS:-100}
BIN=${BIN:-./bin/tierbench}
. bench/lib.sh
[ -x "$BIN" ] || go build -o "$BIN" ./cmd/tierbench

declare -A args=(
  [direct]="--persistence direct"
  [C-cmp]="--persistence cmp --commit-option C --cache 0 --pool 20% --concurrency database"
  [A-exclusive]="--persistence cmp --commit-option A --cache 100% --pool 20% --concurrency exclusive --warmup"
)
order=(direct C-cmp A-exclusive)
c_ratios=(); a_ratios=()
for round in $(seq 1 "$ROUNDS"); do
  declare -A tps=()
  for i in 0 1 2; do
    v=${order[$(( (i + round - 1) % 3 ))]}
    # shellcheck disable=SC2086
    tps[$v]=$("$BIN" run stockonline --db "$DSN" --clients "$CLIENTS" --server-threads 10 --iterations "$ITERATIONS" \
        ${args[$v]} --quiet --out "/tmp/tierbench-container-$v.json" | awk '/^TPS / { print $2 }')
  done
  c=$(awk -v a="${tps[C-cmp]}" -v b="${tps[direct]}" 'BEGIN { printf "%.3f", a / b }')
  a=$(awk -v a="${tps[A-exclusive]}" -v b="${tps[direct]}" 'BEGIN { printf "%.3f", a / b }')
  c_ratios+=("$c"); a_ratios+=("$a")
  printf 'round %d: direct %s TPS, C-cmp %s TPS (%s×), A-exclusive %s TPS (%s×)\n' \
    "$round" "${tps[direct]}" "${tps[C-cmp]}" "$c" "${tps[A-exclusive]}" "$a"
done
printf 'median over %d rounds: C-cmp %s× direct, A-exclusive %s× direct\n' "$ROUNDS" "$(median "${c_ratios[@]}")" "$(median "${a_ratios[@]}")"
