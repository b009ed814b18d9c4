#!/usr/bin/env python3
"""linkbytes.py SWEEP-DIR LINKSTAT.CSV: for each result of a sweep of
--placement hosts, the bytes each host received and sent on its eth0 per
interaction (or operation) during the driven part of the run, from the
counters linkstat.sh sampled, and the rate of each host's busiest direction
in Mbit/s. The window is the result's per-second series (ramps included),
matched to the samples by time; bytes per interaction = the counters'
growth over the window / the operations the series counted in it."""
import csv, glob, json, os, sys
from datetime import datetime

sweep, stat = sys.argv[1], sys.argv[2]
samples = {}  # namespace -> [(t, rx, tx)]
with open(stat) as f:
    for row in csv.DictReader(f):
        if row["rx_bytes"] and row["tx_bytes"]:
            samples.setdefault(row["namespace"], []).append((int(row["time"]), int(row["rx_bytes"]), int(row["tx_bytes"])))

def first_from(series, t):
    """The first sample at or after t."""
    return next((s for s in series if s[0] >= t), None)

def last_until(series, t):
    """The last sample at or before t."""
    best = None
    for s in series:
        if s[0] <= t:
            best = s
    return best

print("| point | throughput | host | rx B/op | tx B/op | busiest direction, Mbit/s |")
print("|---|---:|---|---:|---:|---:|")
for path in sorted(glob.glob(os.path.join(sweep, "*", "*.json"))):
    r = json.load(open(path))
    hosts = r["environment"].get("hosts") or []
    if not hosts:
        continue
    began = datetime.fromisoformat(r["started_at"].replace("Z", "+00:00")).timestamp()
    ts = r["timeseries"]
    t0, t1 = int(began) + 1, int(began) + ts[-1]["t_s"]
    point = os.path.relpath(path, sweep)
    metric = r["summary"]["metric"]
    for h in hosts:
        s = samples.get(h["namespace"], [])
        # Samples of this run only: the namespace names repeat from point to point.
        s = [x for x in s if t0 - 2 <= x[0] <= t1 + 2]
        a, b = first_from(s, t0), last_until(s, t1)
        if not a or not b or b[0] <= a[0]:
            continue
        ops = sum(x["ops"] for x in ts if a[0] - began < x["t_s"] <= b[0] - began)
        if ops == 0:
            continue
        rx, tx, dt = b[1] - a[1], b[2] - a[2], b[0] - a[0]
        print(f"| {point} | {metric['value']:.0f} {metric['name']} | {h['role']} | {rx / ops:,.0f} | {tx / ops:,.0f} | {max(rx, tx) * 8 / dt / 1e6:.1f} |")
