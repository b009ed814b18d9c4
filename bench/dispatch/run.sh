#!/usr/bin/env bash
# RUBiS pages per second under --dispatch generated and reflect, for each
# style, in alternating rounds (a style's two dispatches back to back, the
# order swapped every round), each run with a CPU profile that
# bench/dispatch/shares.sh buckets. docs/cecchet-styles.md reads it.
#
# env: DSN (a loaded RUBiS database, default
# postgres://root@127.0.0.1:5432/i31dispatch: make it with `createdb` and
# `tierbench load rubis --db DSN --scale 1`), STYLES (servlets session facade
# entity local), ROUNDS (2), CLIENTS (50), SECS (20), PROTOCOL (grpc), OUT
# (a directory for results and profiles, default /tmp/tierbench-dispatch),
# BIN (tierbench)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-./bin/tierbench}
DSN=${DSN:-postgres://root@127.0.0.1:5432/i31dispatch}
STYLES=${STYLES:-servlets session facade entity local}
ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-50}
SECS=${SECS:-20}
PROTOCOL=${PROTOCOL:-grpc}
OUT=${OUT:-/tmp/tierbench-dispatch}
mkdir -p "$OUT"
echo "load at the start: $(uptime)"
echo "| round | style | dispatch | interactions/s | remote calls/page | layer ms/page |"
echo "|---|---|---|---:|---:|---:|"
for r in $(seq 1 "$ROUNDS"); do
  order="generated reflect"
  [ $((r % 2)) -eq 0 ] && order="reflect generated"
  for style in $STYLES; do
    persistence=cmp
    case $style in servlets|session) persistence=direct ;; esac
    for d in $order; do
      name=$style-$d-$r
      "$BIN" run rubis --db "$DSN" --no-load --style "$style" --persistence "$persistence" --protocol "$PROTOCOL" \
        --dispatch "$d" --clients "$CLIENTS" --think-scale 0.01 --duration "${SECS}s" --ramp-up 5s --quiet \
        --out "$OUT/$name.json" --cpuprofile "$OUT/$name.prof" >/dev/null 2>"$OUT/$name.err" || true
      jq -r --arg r "$r" --arg s "$style" --arg d "$d" \
        '"| \($r) | \($s) | \($d) | \(.summary.throughput_per_s) | \(.tiers.total.calls_per_page // 0) | \(.tiers.total.layer_ms_per_page // 0) |"' \
        "$OUT/$name.json" 2>/dev/null || echo "| $r | $style | $d | failed: $(tail -1 "$OUT/$name.err") | | |"
    done
  done
done
echo "load at the end: $(uptime)"
