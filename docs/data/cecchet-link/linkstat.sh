#!/bin/sh
# linkstat.sh PID: every second, the bytes each host of the tierbench
# process PID (a run or a sweep of --placement hosts) has received and sent
# on its eth0, as CSV: unix time, namespace, rx bytes, tx bytes. Stop it
# with Ctrl-C. Used for docs/data/cecchet-link and docs/data/tpcapp-link:
# the counters include everything the host sent (the load, the checks);
# read the steady state's rate from the series.
pid=${1:?usage: linkstat.sh PID}
echo "time,namespace,rx_bytes,tx_bytes"
while :; do
	t=$(date +%s)
	for ns in $(ip netns list | awk -v p="tierbench-$pid-" 'index($1, p) == 1 && $1 !~ /switch$/ {print $1}'); do
		ip -n "$ns" -s -o link show eth0 2>/dev/null |
			awk -v t="$t" -v ns="$ns" '{ for (i = 1; i <= NF; i++) { if ($i == "RX:") rx = $(i + 8); if ($i == "TX:") tx = $(i + 8) } print t "," ns "," rx "," tx }'
	done
	sleep 1
done
