package cli

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/model"
	"github.com/tierbench/tierbench/internal/result"
)

// parseAppServers reads --app-servers: a number or a list of numbers of
// app servers, each 1 to model.MaxAppServers; nil when not given.
func parseAppServers(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var ns []int
	for _, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		n, err := strconv.Atoi(t)
		if err != nil {
			return nil, fmt.Errorf("--app-servers %q: %q is not a whole number; want a number of app servers or a list (1,2,4), each from 1 to %d", s, t, model.MaxAppServers)
		}
		if n < 1 || n > model.MaxAppServers {
			return nil, fmt.Errorf("--app-servers %q: %d is out of range; want a number of app servers or a list (1,2,4), each from 1 to %d (as many as a run may start)", s, n, model.MaxAppServers)
		}
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	return ns, nil
}

// clusterTable is the prediction for one number of app servers.
type clusterTable struct {
	servers int
	net     model.Network
	notes   []string
	pts     []model.Point
}

func solveCluster(n model.Network, res *result.Result, c model.Cluster, counts, clients []int) ([]clusterTable, error) {
	var out []clusterTable
	for _, servers := range counts {
		c.Servers = servers
		net, notes, err := model.Spread(n, res, c)
		if err != nil {
			return nil, config.Usage(err)
		}
		pts, err := model.Solve(net, clients)
		if err != nil {
			return nil, err
		}
		out = append(out, clusterTable{servers: servers, net: net, notes: notes, pts: pts})
	}
	return out, nil
}

// severalServers: some run was on several app servers, so the runs are
// for a per-server fit.
func severalServers(runs []*result.Result) bool {
	return slices.ContainsFunc(runs, func(r *result.Result) bool { return r.Config.AppServers > 1 })
}

// fittedServers is the app servers of a fit's runs, to predict when
// --app-servers is not given: the model beside each measurement.
func fittedServers(f *model.ServerFit) []int {
	var out []int
	for _, r := range f.Runs {
		out = append(out, r.Servers)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// writeServerFit says which runs on several app servers the demands
// grow by, and how the fitted model reproduces each on its host.
func writeServerFit(w io.Writer, f *model.ServerFit) {
	if f == nil {
		return
	}
	for _, r := range f.Runs[1:] {
		fmt.Fprintf(w, "fitted to %s, %d app servers, %d clients: measured %.1f/s; model on one host %.1f/s (%+.1f%%)\n",
			r.Path, r.Servers, r.Clients, r.MeasuredX, r.ModelX, pct(r.ModelX, r.MeasuredX))
	}
}

// writeCluster writes, for each number of app servers, its stations
// and its points: throughput, response time and the bottleneck.
func writeCluster(w io.Writer, ex model.Explanation, fit *model.ServerFit, tables []clusterTable) {
	for _, t := range tables {
		fmt.Fprintf(w, "\n%d app server%s:\n", t.servers, plural(t.servers))
		for _, note := range t.notes {
			fmt.Fprintf(w, "note: %s\n", note)
		}
		writeStations(w, t.net)
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "clients\tX/s\tR ms\tbottleneck\tU%%\tsolver\t\n")
		for _, p := range t.pts {
			name, u := bottleneck(t.net, p)
			fmt.Fprintf(tw, "%d\t%.1f\t%.3f\t%s\t%.1f\t%s\t\n", p.Clients, p.X, p.R*1000, name, 100*u, solverName(p.Method))
		}
		tw.Flush()
	}
	switch {
	case len(tables) == 0 || ex.Clients == 0:
	case fit == nil:
		fmt.Fprintln(w, "\nfrom one server's run alone the spread misses what each added process costs (its runtime, its pools, the hop from the driver): against real runs of 2 servers it was 2× too optimistic; give a run on several servers to fit that (docs/model.md); R excludes the think time")
	default:
		fmt.Fprintln(w, "\nthe demands grow with the servers as the runs measured (docs/model.md); R excludes the think time")
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// writeClusterCSV writes one row per number of app servers and clients,
// and closes f.
func writeClusterCSV(f *os.File, tables []clusterTable) error {
	w := csv.NewWriter(f)
	w.Write([]string{"app_servers", "clients", "throughput_per_s", "response_ms", "bottleneck", "bottleneck_utilisation_pct", "solver"})
	g := func(x float64, digits int) string { return strconv.FormatFloat(x, 'f', digits, 64) }
	for _, t := range tables {
		for _, p := range t.pts {
			name, u := bottleneck(t.net, p)
			w.Write([]string{strconv.Itoa(t.servers), strconv.Itoa(p.Clients), g(p.X, 3), g(p.R*1000, 4), name, g(100*u, 2), solverName(p.Method)})
		}
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}
