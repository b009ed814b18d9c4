#!/usr/bin/env bash
# The RUBiS site's pages per second as wrk measures them and as tierbench
# drive does, on the same page, the same site, the same number of
# connections, in alternating rounds: does the emulated browser keep up
# with a plain HTTP load generator? (docs/rubis.md)
#
# env: DSN (default sqlite:/tmp/tierbench-rubis-bench.db), SCALE (10),
# CONNS (32), SECONDS_PER_RUN (20), ROUNDS (3), THREADS (server threads, 10),
# PAGES (viewitem search), BIN (tierbench), NO_LOAD (1: the database is loaded)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-./bin/tierbench}
DSN=${DSN:-sqlite:/tmp/tierbench-rubis-bench.db}
SCALE=${SCALE:-10}
CONNS=${CONNS:-32}
SECS=${SECONDS_PER_RUN:-20}
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-10}
PAGES=${PAGES:-viewitem search}
LISTEN=127.0.0.1:18090
URL=http://$LISTEN
command -v wrk >/dev/null || { echo "bench: wrk is missing (apt-get install -y wrk)" >&2; exit 3; }

[ "${NO_LOAD:-}" = 1 ] || "$BIN" load rubis --db "$DSN" --scale "$SCALE" | tail -1
log=$(mktemp)
"$BIN" serve rubis --db "$DSN" --server-threads "$THREADS" --listen "$LISTEN" >"$log" 2>&1 &
srv=$!
trap 'kill -TERM $srv 2>/dev/null; wait $srv 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 100); do grep -q '^serving' "$log" && break; sleep 0.1; done
grep -q '^serving' "$log" || { cat "$log" >&2; exit 3; }

# What wrk requests. ViewItem: one item, as the driver's table walks to an
# item and stays on it. Search: search.lua draws the category and follows
# the page links as the browser does (the driver's table searches again and
# again), so both request the same pages in the same proportions.
declare -A path=(
  [viewitem]="/PHP/ViewItem.php?itemId=1"
  [search]="/PHP/SearchItemsByCategory.php?category=1&categoryName=Antiques+%26+Art&page=0&nbOfItems=20"
)
declare -A script=([viewitem]="" [search]="-s bench/rubis/search.lua")
echo "# $("$BIN" --version) · $DSN scale $SCALE · $CONNS connections · $THREADS server threads · ${SECS}s a run · $(nproc) CPUs"
printf '%-9s %5s %12s %12s %7s\n' page round wrk_pages_s drive_pages_s ratio
for page in $PAGES; do
  curl -fsS -o /dev/null "$URL${path[$page]}"
  for round in $(seq 1 "$ROUNDS"); do
    # shellcheck disable=SC2086 # the script option is two words or none
    w=$(wrk -t2 -c"$CONNS" -d"${SECS}s" ${script[$page]} "$URL${path[$page]}" | awk '/^Requests\/sec/ { print $2 }')
    out=$(mktemp)
    "$BIN" drive rubis --target "$URL" --scale "$SCALE" --mix "bench/rubis/${page}_transitions.txt" --think-scale 0 \
      --clients "$CONNS" --duration "$((SECS + 2))s" --ramp-up 2s --quiet --out "$out" >/dev/null
    d=$(grep -m1 '"throughput_per_s"' "$out" | tr -dc '0-9.')
    rm -f "$out"
    printf '%-9s %5d %12.1f %12.1f %7.3f\n' "$page" "$round" "$w" "$d" "$(awk "BEGIN { print $d / $w }")"
  done
done
