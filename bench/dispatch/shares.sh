#!/usr/bin/env bash
# Where a RUBiS run's CPU went, from a Go CPU profile (run --cpuprofile):
# each sample is walked from its leaf towards the root and given to the
# first frame that belongs to a part of the middle tier (runtime, reflect
# and the standard library's helpers belong to none: their time is their
# caller's). The parts (docs/cecchet-styles.md, "Where the CPU goes"):
#   beans      the beans' own code: Facade's and Servlets' methods (the
#              interactions, the session beans' SQL code)
#   container  internal/container, internal/invoker, the generated
#              service handlers (_Handler) that invoke a bean's method;
#              "reflect" is the part of it spent in package reflect
#   layer      the communication layer: internal/remote, grpc, protobuf,
#              http2, the stubs and skeletons (rubispb, the entity tier's
#              and the session bean's conversions)
#   db driver  internal/store, pgx, the MySQL driver, database/sql, SQLite
#   web        the pages: the site's handlers and html/template
#   http       net/http (the front's server, the browsers' client)
#   driver     the emulated browsers and the measurements
#   other      the runtime alone (GC, scheduler, profiler) and the rest
# usage: bench/dispatch/shares.sh PROFILE... (one markdown row each)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 PROFILE..." >&2; exit 2; }
echo "| profile | CPU s | beans | container | of which reflect | layer | db driver | web | http | driver | other |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for p in "$@"; do
  go tool pprof -traces "$p" 2>/dev/null | awk -v name="$(basename "$p" .prof)" '
    function bucket(f) {
      if (f ~ /pb\._[A-Za-z]+_[A-Za-z]+_Handler/) return "container"
      if (f ~ /internal\/invoker\.|internal\/container\.|rubis\.localTx\./) return "container"
      if (f ~ /rubis\.\(\*Facade\)\.|rubis\.\(\*Servlets\)\./) return "beans"
      if (f ~ /rubis\/browser\.|rubis\.\(\*client\)|rubis\.newBrowsers|internal\/driver\.|internal\/metrics\.|golang\.org\/x\/net\/html/) return "driver"
      if (f ~ /rubis\.\(\*EntityTier\)|rubis\.remote|rubis\.\(\*remote|rubis\.\(\*sessionBean\)|rubis\.sessionClient|rubis\.(call|invoke|serve)\[|rubis\.(intValue|floatValue|stringValue|timeValue|keyToPB|keyFromPB|valueToPB|valueFromPB|timeFromPB)|rubispb\.|internal\/remote|google\.golang\.org\/(grpc|protobuf|genproto)|golang\.org\/x\/net\/http2/) return "layer"
      if (f ~ /internal\/store|jackc\/pg|go-sql-driver|database\/sql|modernc\.org\/sqlite/) return "db"
      if (f ~ /rubis\.|html\/template|text\/template/) return "web"
      if (f ~ /^net\/http\./) return "http"
      return ""
    }
    function flush() {
      if (v == 0) return
      total += v; b = ""; refl = 0
      for (i = 1; i <= n; i++) {
        if (fr[i] ~ /^reflect\./) refl = 1
        b = bucket(fr[i]); if (b != "") break
      }
      if (b == "") b = "other"
      sum[b] += v
      if (b == "container" && refl) sum["reflect"] += v
      v = 0; n = 0
    }
    function ms(s) { if (s ~ /ms$/) return s + 0; if (s ~ /us$|µs$/) return (s + 0) / 1000; if (s ~ /s$/) return (s + 0) * 1000; return s + 0 }
    /^-+\+-+/ { flush(); next }
    /^ +[0-9.]+(ms|s|us|µs) / { flush(); v = ms($1); $1 = ""; sub(/^ +/, ""); sub(/ \(inline\)$/, ""); fr[n = 1] = $0; next }
    v > 0 { f = $0; sub(/^ +/, "", f); sub(/ \(inline\)$/, "", f); fr[++n] = f }
    END {
      flush()
      if (total == 0) { printf "| %s | 0 | | | | | | | | | |\n", name; exit }
      printf "| %s | %.1f", name, total / 1000
      split("beans container reflect layer db web http driver other", ks, " ")
      for (k = 1; k <= 9; k++) printf " | %.1f%%", 100 * sum[ks[k]] / total
      print " |"
    }'
done
