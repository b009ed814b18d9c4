package runner

import (
	"bytes"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierbench/tierbench/internal/driver"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/store"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: Linux reports
// them in USER_HZ ticks, which its ABI fixes at 100 whatever the kernel's
// own tick rate (sysconf(_SC_CLK_TCK) returns it; Go has no sysconf
// without cgo).
const userHZ = 100

// cpuMeter reads the CPU time of this process (and its tier processes)
// and of the run's database server when the steady state starts and when
// it ends, for the capacity model.
//
// The driver's phases are timed from its own start, which this package
// cannot observe; the meter starts just before the driver and reads at
// --ramp-up and at --duration − --ramp-down after that, so its interval
// is off the driver's window by the time the driver takes to create its
// terminals (milliseconds). What remains, result.BuildResources scales
// away: the CPU times are multiplied by window / interval. A run that
// ends early (iterations done, an interrupt) is read when the driver
// returns.
type cpuMeter struct {
	read   func() result.CPUSample
	in     result.ResourceInputs
	mu     sync.Mutex
	start  *result.CPUSample
	end    *result.CPUSample
	timers []*time.Timer
}

// startCPUMeter starts reading for a driver about to run with dcfg.
func (s *state) startCPUMeter(dcfg driver.Config) *cpuMeter {
	m := &cpuMeter{}
	db := s.dbProcesses()
	var tiers []int
	for _, p := range s.procs {
		tiers = append(tiers, p.PID())
	}
	m.in = result.ResourceInputs{AppCPUSource: "getrusage", DBCPUSource: db.source, AppCPUs: runtime.NumCPU(), DBCPUs: db.cpus, SharedCPUs: db.shared}
	if len(tiers) > 0 {
		m.in.AppCPUSource = "getrusage + /proc of the tier processes"
	}
	if s.placed != nil {
		m.in.AppCPUs, m.in.DBCPUs = len(s.placed.plan.App), len(s.placed.plan.DB)
		m.in.SharedCPUs = slices.Equal(s.placed.plan.App, s.placed.plan.DB)
	}
	m.read = func() result.CPUSample {
		smp := result.CPUSample{At: time.Now(), App: selfCPU()}
		for _, pid := range tiers {
			if st, err := readStat(pid); err == nil {
				smp.App += st.total()
			}
		}
		if db.match != nil {
			smp.DB, smp.DBProcesses = db.read()
		}
		return smp
	}
	take := func(at **result.CPUSample) func() {
		return func() {
			smp := m.read()
			m.mu.Lock()
			defer m.mu.Unlock()
			if *at == nil {
				*at = &smp
			}
		}
	}
	if dcfg.RampUp > 0 {
		m.timers = append(m.timers, time.AfterFunc(dcfg.RampUp, take(&m.start)))
	} else {
		take(&m.start)()
	}
	if dcfg.Duration > 0 {
		m.timers = append(m.timers, time.AfterFunc(dcfg.Duration-dcfg.RampDown, take(&m.end)))
	}
	return m
}

// stop ends the readings once the driver has returned: nil when the run
// never reached its steady state.
func (m *cpuMeter) stop(rep driver.Report) *result.ResourceInputs {
	for _, t := range m.timers {
		t.Stop()
	}
	m.mu.Lock()
	start, end := m.start, m.end
	m.mu.Unlock()
	if start == nil || rep.Window <= 0 {
		return nil
	}
	if end == nil {
		smp := m.read()
		end = &smp
	}
	in := m.in
	in.Start, in.End, in.Window = *start, *end, rep.Window
	return &in
}

// selfCPU is this process's user and system time so far.
func selfCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dbProcs is how to find the database server's processes.
type dbProcs struct {
	source string
	// match picks the server's processes from their stat; nil when they
	// cannot be read here.
	match func(pid int, st procStat) bool
	// cpus is how many CPUs the server may use; shared, whether they are
	// this process's too.
	cpus   int
	shared bool
}

// dbProcesses finds the run's database server: the private one of
// --placement (its postmaster and the backends it forked), a local
// PostgreSQL or MariaDB/MySQL (every process named postgres, or mariadbd
// or mysqld, on the host: another server of the same kind on the host is
// counted too), SQLite inside this process, or a server elsewhere.
func (s *state) dbProcesses() dbProcs {
	if s.placed != nil {
		root := s.placed.server.PID()
		return dbProcs{source: result.DBCPUProc, match: func(pid int, st procStat) bool { return pid == root || st.ppid == root }}
	}
	if s.db == nil && s.checked == nil {
		return dbProcs{source: result.DBCPURemote}
	}
	// With --tiers 2|3 the tiers' processes hold the sessions: SQLite
	// runs in them (counted as the application's), a server as below.
	dsn := s.cfg.DB
	var names []string
	switch dsn.Dialect {
	case store.SQLite:
		return dbProcs{source: result.DBCPUInProcess, shared: true}
	case store.Postgres:
		names = []string{"postgres"}
	case store.MySQL:
		names = []string{"mariadbd", "mysqld"}
	}
	if names == nil || !localHost(dsn) {
		return dbProcs{source: result.DBCPURemote}
	}
	d := dbProcs{source: result.DBCPUProc, match: func(_ int, st procStat) bool { return slices.Contains(names, st.comm) }}
	// The server's CPUs are those its first process may run on.
	pids, _ := procPIDs()
	for _, pid := range pids {
		if st, err := readStat(pid); err == nil && d.match(pid, st) {
			var set, self unix.CPUSet
			if unix.SchedGetaffinity(pid, &set) == nil && unix.SchedGetaffinity(0, &self) == nil {
				d.cpus = set.Count()
				d.shared = overlap(set, self)
			}
			return d
		}
	}
	return dbProcs{source: "unknown: no " + strings.Join(names, " or ") + " process readable on this host"}
}

// read sums the CPU time of the server's processes. A process's children
// that ended and were reaped are in its cutime and cstime, so a backend
// that exits between two readings is still counted, through its
// postmaster.
func (d dbProcs) read() (time.Duration, int) {
	pids, err := procPIDs()
	if err != nil {
		return 0, 0
	}
	var total time.Duration
	n := 0
	for _, pid := range pids {
		st, err := readStat(pid)
		if err != nil || !d.match(pid, st) {
			continue
		}
		total += st.total()
		n++
	}
	return total, n
}

// localHost: the DSN's server is on this host (loopback or a Unix socket).
func localHost(dsn store.DSN) bool {
	if dsn.URL == nil {
		return false
	}
	h := dsn.URL.Hostname()
	if strings.HasPrefix(h, "/") || strings.HasPrefix(dsn.URL.Query().Get("host"), "/") {
		return true
	}
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

func overlap(a, b unix.CPUSet) bool {
	for i := range a {
		if bits.OnesCount64(uint64(a[i]&b[i])) > 0 {
			return true
		}
	}
	return false
}

// procStat is what the meter reads of /proc/<pid>/stat.
type procStat struct {
	comm string
	ppid int
	// utime, stime, cutime, cstime in USER_HZ ticks.
	utime, stime, cutime, cstime int64
}

// total is the process's CPU time, its reaped children's included.
func (s procStat) total() time.Duration {
	return time.Duration(s.utime+s.stime+s.cutime+s.cstime) * time.Second / userHZ
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat reads proc(5)'s stat line: "pid (comm) state ppid …", where
// comm may hold spaces and parentheses, so the fields are counted from
// the last ')'.
func parseStat(b []byte) (procStat, error) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("stat %q: no (comm)", b)
	}
	f := strings.Fields(string(b[end+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat %q: %d fields", b, len(f)+2)
	}
	st := procStat{comm: string(b[open+1 : end])}
	nums := []*int64{&st.utime, &st.stime, &st.cutime, &st.cstime}
	for i, p := range nums {
		v, err := strconv.ParseInt(f[11+i], 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("stat field %d: %w", 14+i, err)
		}
		*p = v
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return procStat{}, fmt.Errorf("stat field 4: %w", err)
	}
	st.ppid = ppid
	return st, nil
}

// procPIDs lists the processes of the host.
func procPIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
