package cli

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/model"
	"github.com/tierbench/tierbench/internal/report"
	"github.com/tierbench/tierbench/internal/result"
)

// Limits of --clients: the approximate solver's cost grows with the
// clients, the table's with the points.
const (
	modelMaxClients = 1_000_000
	modelMaxPoints  = 10_000
)

func newModelCmd(_ *Env) *cobra.Command {
	var clients, csvPath, servers string
	var calibrate []string
	var step int
	var sameHost bool
	var invalidation time.Duration
	cmd := &cobra.Command{
		Use:   "model RESULT.json [RESULT.json…]",
		Short: "Capacity model (MVA) from measured runs: throughput and response time against clients and app servers",
		Long: `Build a closed queueing network from one measured run (its CPU time per operation,
its clients' time between operations, its server threads and the rest of each
operation's time) and solve it by mean value analysis for other numbers of clients.
The network reproduces the run's throughput at the run's own clients; the table
says what it predicts elsewhere, and which station saturates.

With two results or more of one configuration at different clients (more files, or
--calibrate), every demand depends on k, the operations in the middle tier: the
CPUs' falls as D∞ + (D1 − D∞)/k, the latency's rises as L1 + s·(k − 1), each
fitted to the runs. With --app-servers N the network
is spread over N app servers sharing the database. Given a run on one app server
and runs of it on several (run --app-servers M, the same clients), every demand
grows with the servers as those runs measured, a line per station. docs/model.md explains the
stations, the law and where each number comes from.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) < 1 {
				return fmt.Errorf("name a RESULT.json (a result file of tierbench run), and more to calibrate a load-dependent model, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := append(slices.Clone(args), calibrate...)
			if len(paths) > modelMaxRuns {
				return config.Usage(fmt.Errorf("%d result files: a model takes at most %d", len(paths), modelMaxRuns))
			}
			if step < 0 {
				return config.Usage(fmt.Errorf("--step %d: want a whole number of clients, 1 or more (0: points 1, 2, 5, 10, 20, 50, …)", step))
			}
			counts, err := parseAppServers(servers)
			if err != nil {
				return config.Usage(err)
			}
			if invalidation < 0 || invalidation > time.Minute {
				return config.Usage(fmt.Errorf("--invalidation-cost %v: want a duration from 0 to 1m (the time a commit waits for its peers, e.g. 300us)", invalidation))
			}
			runs := make([]*result.Result, len(paths))
			for i, p := range paths {
				if runs[i], err = readModelResult(cmd.Context(), p); err != nil {
					return err
				}
			}
			if counts == nil && !severalServers(runs) && (sameHost || invalidation != 0) {
				return config.Usage(errors.New("--same-host and --invalidation-cost describe app servers: give --app-servers N with them"))
			}
			res := runs[0]
			// A result without CPU times (model.ErrNoResources) is an
			// older run's: the user's to run again.
			var net model.Network
			var ex model.Explanation
			var cals []model.Calibration
			var fit *model.ServerFit
			if severalServers(runs) {
				if net, ex, fit, err = model.FitServers(paths, runs); err != nil {
					return config.Usage(err)
				}
				if counts == nil {
					counts = fittedServers(fit)
				}
			} else if len(runs) == 1 {
				net, ex, err = model.FromResult(res)
				if err != nil {
					return config.Usage(fmt.Errorf("%s: %w", paths[0], err))
				}
			} else if net, ex, cals, err = model.Calibrate(paths, runs); err != nil {
				return config.Usage(err)
			}
			spec := clients
			if spec == "" {
				spec = fmt.Sprintf("1..%d", min(10*ex.Clients, modelMaxClients))
			}
			ns, err := parseClients(spec, step, ex.Clients)
			if err != nil {
				return config.Usage(err)
			}
			// A range also shows the other runs' own clients.
			for _, c := range cals[min(len(cals), 1):] {
				if strings.Contains(spec, "..") {
					ns = append(ns, c.Clients)
				}
			}
			slices.Sort(ns)
			ns = slices.Compact(ns)
			// The CSV file is made sure of before anything is printed.
			var csvFile *os.File
			if csvPath != "" {
				if csvFile, err = os.Create(csvPath); err != nil {
					return config.Usage(fmt.Errorf("--csv %s: the table cannot be written there: %v", csvPath, errors.Unwrap(err)))
				}
			}
			out := cmd.OutOrStdout()
			if counts != nil {
				cluster := model.Cluster{SameHost: sameHost, InvalidationCost: invalidation, Fit: fit}
				tables, err := solveCluster(net, res, cluster, counts, ns)
				if err != nil {
					return err
				}
				writeModelHead(out, paths[0], res, ex, cals)
				writeServerFit(out, fit)
				writeCluster(out, ex, fit, tables)
				if csvFile != nil {
					if err := writeClusterCSV(csvFile, tables); err != nil {
						return fmt.Errorf("--csv %s: %w", csvPath, err)
					}
					fmt.Fprintf(out, "csv: %s\n", csvPath)
				}
				return nil
			}
			pts, err := model.Solve(net, ns)
			if err != nil {
				return err
			}
			writeModel(out, paths[0], res, net, ex, cals, pts)
			if csvFile != nil {
				if err := writeModelCSV(csvFile, net, ex, pts); err != nil {
					return fmt.Errorf("--csv %s: %w", csvPath, err)
				}
				fmt.Fprintf(out, "csv: %s\n", csvPath)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&clients, "clients", "", "clients to predict: a range A..B (points 1, 2, 5, 10, 20, 50, … within it, its ends and the run's own clients), a list 1,10,100, or one number (default 1..10 × the run's clients)")
	cmd.Flags().IntVar(&step, "step", 0, "with a range A..B, points every STEP clients from A instead of 1, 2, 5, 10, …")
	cmd.Flags().StringVar(&csvPath, "csv", "", "also write the table, with every station's residence time and its utilisation (a delay's: the operations in it at once), to this CSV file")
	cmd.Flags().StringArrayVar(&calibrate, "calibrate", nil, "a result of the same configuration at other clients: the demands become load-dependent, fitted to all the results (repeatable; the same as naming more files)")
	cmd.Flags().StringVar(&servers, "app-servers", "", "predict N app servers over the one database, each a CPU station of its own (the run's app-server CPU demand split among them): a number or a list 1,2,4, each from 1 to 32")
	cmd.Flags().BoolVar(&sameHost, "same-host", false, "with --app-servers: the app servers and the database share the run's CPUs (one machine) instead of each having CPUs of its own")
	cmd.Flags().DurationVar(&invalidation, "invalidation-cost", 0, "with --app-servers above 1: the time each commit waits for its peers to drop what it wrote (--coherence invalidate), e.g. 300us; 0 (the default) for none")
	return cmd
}

// modelMaxRuns bounds the results a load-dependent model is fitted to.
const modelMaxRuns = 64

// readModelResult reads a result file, saying in the user's words what is
// wrong with one that cannot be read (report.ReadRun's words).
// An interrupt ends the wait: a large file's decoding is left to the
// process's exit.
func readModelResult(ctx context.Context, path string) (*result.Result, error) {
	type read struct {
		run *report.Run
		err error
	}
	interrupted := &exitError{code: ExitFailed, err: fmt.Errorf("%s: interrupted while reading it; nothing modelled", path)}
	if ctx.Err() != nil {
		return nil, interrupted
	}
	done := make(chan read, 1)
	go func() {
		run, err := report.ReadRun(path)
		done <- read{run, err}
	}()
	select {
	case <-ctx.Done():
		return nil, interrupted
	case r := <-done:
		if r.err != nil {
			return nil, config.Usage(r.err)
		}
		return r.run.Result, nil
	}
}

// clientsForms is what --clients allows, for messages.
const clientsForms = "a number of clients (100), a list (1,10,100) or a range (1..1000), each from 1 to 1000000"

// parseClients reads --clients: a range A..B is A, the 1-2-5 points
// between (or every step), B and the run's own clients when within;
// a list is its numbers in order without repeats.
func parseClients(s string, step, run int) ([]int, error) {
	bad := func(why string) error {
		return fmt.Errorf("--clients %q: %s; want %s", s, why, clientsForms)
	}
	num := func(t string) (int, error) {
		n, err := strconv.Atoi(strings.TrimSpace(t))
		if err != nil {
			return 0, bad(fmt.Sprintf("%q is not a whole number", strings.TrimSpace(t)))
		}
		if n < 1 || n > modelMaxClients {
			return 0, bad(fmt.Sprintf("%d is out of range", n))
		}
		return n, nil
	}
	if a, b, ok := strings.Cut(s, ".."); ok {
		lo, err := num(a)
		if err != nil {
			return nil, err
		}
		hi, err := num(b)
		if err != nil {
			return nil, err
		}
		if hi < lo {
			return nil, bad(fmt.Sprintf("the range ends (%d) before it starts (%d)", hi, lo))
		}
		ns := []int{lo, hi}
		if step > 0 {
			if (hi-lo)/step > modelMaxPoints {
				return nil, bad(fmt.Sprintf("--step %d makes more than %d points", step, modelMaxPoints))
			}
			for n := lo + step; n < hi; n += step {
				ns = append(ns, n)
			}
		} else {
			for decade := 1; decade <= hi; decade *= 10 {
				for _, f := range []int{1, 2, 5} {
					if n := f * decade; n > lo && n < hi {
						ns = append(ns, n)
					}
				}
			}
		}
		if run >= lo && run <= hi {
			ns = append(ns, run)
		}
		slices.Sort(ns)
		return slices.Compact(ns), nil
	}
	var ns []int
	for _, t := range strings.Split(s, ",") {
		n, err := num(t)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	if len(ns) > modelMaxPoints {
		return nil, bad(fmt.Sprintf("more than %d points", modelMaxPoints))
	}
	return ns, nil
}

// bottleneck is the busiest at p of the stations that queue and the pool
// of server threads: threads all busy while the CPU is at 16% are what
// limits the run, so they are named, not the CPU.
func bottleneck(n model.Network, p model.Point) (string, float64) {
	name, u := "", -1.0
	for i, s := range n.Stations {
		if s.Kind != model.Delay && p.Stations[i].Utilisation > u {
			name, u = s.Name, p.Stations[i].Utilisation
		}
	}
	if p.Pool != nil && p.Pool.Utilisation > u {
		return threadsName, p.Pool.Utilisation
	}
	return name, u
}

// threadsName names the pool of server threads in tables.
const threadsName = "threads"

func writeModel(w io.Writer, path string, res *result.Result, n model.Network, ex model.Explanation, cals []model.Calibration, pts []model.Point) {
	writeModelHead(w, path, res, ex, cals)
	fmt.Fprintln(w, "\nstations (demand per operation):")
	writeStations(w, n)
	fmt.Fprintln(w)
	writeTable(w, n, ex, cals, pts)
}

// writeModelHead says which runs the model comes from and how well it
// reproduces them.
func writeModelHead(w io.Writer, path string, res *result.Result, ex model.Explanation, cals []model.Calibration) {
	db := res.Environment.DB
	if db == "" {
		db = res.Environment.Target
	}
	fmt.Fprintf(w, "model of %s: %s on %s, %d clients", path, ex.Workload, db, ex.Clients)
	if ex.ServerThreads > 0 {
		fmt.Fprintf(w, ", %d server threads", ex.ServerThreads)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "at the run's %d clients: measured %.1f/s, %.3f ms; model %.1f/s (%+.1f%%), %.3f ms (%+.1f%%)\n",
		ex.Clients, ex.MeasuredX, ex.MeasuredR*1000, ex.ModelX, pct(ex.ModelX, ex.MeasuredX), ex.ModelR*1000, pct(ex.ModelR, ex.MeasuredR))
	for _, c := range cals[min(len(cals), 1):] {
		fmt.Fprintf(w, "calibrated on %s, %d clients (%.2f operations in service): measured %.1f/s; model %.1f/s (%+.1f%%)\n",
			c.Path, c.Clients, c.InService, c.MeasuredX, c.ModelX, pct(c.ModelX, c.MeasuredX))
	}
	for _, note := range ex.Notes {
		fmt.Fprintf(w, "note: %s\n", note)
	}
}

func writeStations(w io.Writer, n model.Network) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  think\tdelay\t\t%.3f ms\t%s\n", n.Think*1000, n.ThinkSource)
	for _, s := range n.Stations {
		servers := ""
		if s.Kind == model.Multi {
			servers = strconv.Itoa(s.Servers)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.3f ms\t%s\n", s.Name, s.Kind, servers, s.Demand*1000, s.Source)
	}
	if n.Admission > 0 {
		fmt.Fprintf(tw, "  %s\tpool\t%d\t\t%s\n", threadsName, n.Admission, n.AdmissionSource)
	}
	tw.Flush()
}

// writeTable writes the points, the measurement beside the rows of the
// runs the model comes from.
func writeTable(w io.Writer, n model.Network, ex model.Explanation, cals []model.Calibration, pts []model.Point) {
	measured := map[int]string{ex.Clients: fmt.Sprintf("  ← measured %.1f/s, %.3f ms", ex.MeasuredX, ex.MeasuredR*1000)}
	for _, c := range cals[min(len(cals), 1):] {
		if _, ok := measured[c.Clients]; !ok {
			measured[c.Clients] = fmt.Sprintf("  ← measured %.1f/s", c.MeasuredX)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	pool := ""
	if n.Admission > 0 {
		pool = "threads busy%\t"
	}
	fmt.Fprintf(tw, "clients\tX/s\tR ms\tbottleneck\tU%%\t%ssolver\t\n", pool)
	for _, p := range pts {
		name, u := bottleneck(n, p)
		mark := measured[p.Clients]
		busy := ""
		if p.Pool != nil {
			busy = fmt.Sprintf("%.1f\t", 100*p.Pool.Utilisation)
		}
		fmt.Fprintf(tw, "%d\t%.1f\t%.3f\t%s\t%.1f\t%s%s\t%s\n", p.Clients, p.X, p.R*1000, name, 100*u, busy, solverName(p.Method), mark)
	}
	tw.Flush()
	fmt.Fprintf(w, "solver: %s; R excludes the think time\n", pts[len(pts)-1].Method)
}

func solverName(m model.Method) string {
	if m == model.Approx || m == model.ApproxPooled || m == model.ApproxLoadDependent {
		return "approx"
	}
	return "exact"
}

// pct is got's difference from want in percent, 0 when it would print as
// -0.0.
func pct(got, want float64) float64 {
	if want == 0 {
		return 0
	}
	d := 100 * (got - want) / want
	if math.Abs(d) < 0.05 {
		return 0
	}
	return d
}

// snakeCase makes a station's name a CSV column's: "db cpu" → "db_cpu".
func snakeCase(name string) string {
	return strings.Join(strings.Fields(strings.ToLower(name)), "_")
}

// writeModelCSV writes the table to f and closes it.
func writeModelCSV(f *os.File, n model.Network, ex model.Explanation, pts []model.Point) error {
	w := csv.NewWriter(f)
	head := []string{"clients", "throughput_per_s", "response_ms", "bottleneck", "bottleneck_utilisation_pct", "solver", "measured_throughput_per_s", "measured_response_ms"}
	for _, s := range n.Stations {
		// A delay has no servers to keep busy: its figure is how many
		// operations are in it at once (X·D), which has no bound.
		load := "_utilisation_pct"
		if s.Kind == model.Delay {
			load = "_in_service"
		}
		head = append(head, snakeCase(s.Name)+load, snakeCase(s.Name)+"_residence_ms")
	}
	if n.Admission > 0 {
		head = append(head, threadsName+"_busy_pct", threadsName+"_wait_ms")
	}
	w.Write(head)
	g := func(x float64, digits int) string { return strconv.FormatFloat(x, 'f', digits, 64) }
	for _, p := range pts {
		name, u := bottleneck(n, p)
		row := []string{strconv.Itoa(p.Clients), g(p.X, 3), g(p.R*1000, 4), name, g(100*u, 2), solverName(p.Method), "", ""}
		if p.Clients == ex.Clients {
			row[6], row[7] = g(ex.MeasuredX, 3), g(ex.MeasuredR*1000, 4)
		}
		for i, s := range p.Stations {
			load := g(100*s.Utilisation, 2)
			if n.Stations[i].Kind == model.Delay {
				load = g(s.Utilisation, 3)
			}
			row = append(row, load, g(s.Residence*1000, 4))
		}
		if p.Pool != nil {
			row = append(row, g(100*p.Pool.Utilisation, 2), g(p.Pool.Residence*1000, 4))
		}
		w.Write(row)
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}
