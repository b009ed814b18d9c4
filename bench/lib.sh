# Functions the bench scripts share; sourced from the repository's root
# (`. bench/lib.sh`), not run.

# median V...: the median of the numbers, to three decimals.
median() {
  printf '%s\n' "$@" | sort -n | awk '{ r[NR] = $1 } END { m = (NR % 2) ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2; printf "%.3f", m }'
}

# need_pgbench: pgbench and psql, and with SWITCHES=1 perf and a run of
# SECS ≥ 8 seconds (count_switches counts its middle half); exits 3 or 2.
need_pgbench() {
  command -v pgbench >/dev/null || { echo "pgbench not found (Debian: postgresql-client)" >&2; exit 3; }
  command -v psql >/dev/null || { echo "psql not found (Debian: postgresql-client)" >&2; exit 3; }
  if [ "$SWITCHES" = 1 ]; then
    command -v perf >/dev/null || { echo "SWITCHES=1 needs perf (Debian: linux-perf)" >&2; exit 3; }
    [ "$SECS" -ge 8 ] || { echo "SWITCHES=1 needs SECONDS_PER_RUN of at least 8 (it counts the middle half)" >&2; exit 2; }
  fi
}

# count_switches PID: perf stat on PID's threads for the middle half of a
# run of SECS seconds; sets sw (context switches) and cpu_ms (task clock).
# Only the steady state is counted, not connecting, loading or checking.
# (perf must be allowed to attach: perf_event_paranoid <= 2 for one's own
# processes.)
count_switches() {
  local pid=$1 stat
  sleep $((SECS / 4))
  stat=$(perf stat -x, -e context-switches,task-clock -p "$pid" -- sleep $((SECS / 2)) 2>&1 >/dev/null)
  sw=$(echo "$stat" | awk -F, '$3 == "context-switches" { print $1 }')
  cpu_ms=$(echo "$stat" | awk -F, '$3 == "task-clock" { print $1 }')
}

# per_tx RATE: with SWITCHES=1, the client's context switches and CPU µs
# per transaction in the window count_switches counted; nothing otherwise.
per_tx() {
  [ "$SWITCHES" = 1 ] || return 0
  awk -v sw="$sw" -v ms="$cpu_ms" -v tps="$1" -v secs=$((SECS / 2)) \
    'BEGIN { n = tps * secs; printf "%.2f switches, %.1f µs CPU", sw / n, ms * 1000 / n }'
}

# measure LOG CMD...: runs the client CMD with its output in LOG, counting
# its switches while it runs when SWITCHES=1; a client that fails has LOG
# shown and the script exits 3.
measure() {
  local log=$1 pid
  shift
  "$@" >"$log" 2>&1 &
  pid=$!
  if [ "$SWITCHES" = 1 ]; then count_switches "$pid"; fi
  wait "$pid" || { cat "$log" >&2; rm -f "$log"; exit 3; }
}
