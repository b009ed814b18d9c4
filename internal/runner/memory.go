package runner

import (
	"bufio"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tierbench/tierbench/internal/config"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// bytesPerClient is what one emulated client costs the driver's process,
// measured: the peak resident set of Stock-Online runs with 20,000 and
// 80,000 clients (one iteration, direct SQL) grew by 28.6 KiB a client
// (docs/performance.md); rounded up.
const bytesPerClient = 32 << 10

// bytesPerStep is what one operation of a deck costs each client: the
// dealt card and its copy in the iteration's buffer (workload.Step, 24
// bytes each), and the pair's slot.
const bytesPerStep = 56

// fitsInMemory refuses, before anything runs, more clients than this
// machine's available memory holds at the measured cost per client, each
// with its deck of one iteration's operations (--mix counts): such a run
// would end in the Go runtime's "out of memory", or the kernel's kill,
// with no result.
func fitsInMemory(cfg config.Run) error {
	return fitsMemory(cfg, workload.Info{})
}

// fitsMemory is fitsInMemory for a workload whose terminals may come
// from its scale (ECperf's from --ir) and whose mix may be a deck.
func fitsMemory(cfg config.Run, info workload.Info) error {
	available, ok := availableMemory()
	if !ok {
		return nil
	}
	clients, flag := int64(cfg.Clients), fmt.Sprintf("--clients %d", cfg.Clients)
	opts := workload.OptionsOf(cfg)
	if info.Grouped {
		f := opts.Footprint(cfg)
		if f.Terminals == 0 {
			return nil
		}
		clients = f.Terminals
		flag = fmt.Sprintf("--%s %d (%d terminals)", scaleFlag(f), cfg.Scale, clients)
	}
	perClient := int64(bytesPerClient)
	deck := int64(0)
	if m, err := opts.MixOf(); err == nil && m != nil && m.Kind == workload.Deck {
		deck = int64(m.Size())
	}
	perClient += deck * bytesPerStep
	need := float64(clients) * float64(perClient)
	if need <= float64(available)*0.9 {
		return nil
	}
	if deck > 1000 {
		return config.Usage(fmt.Errorf("--mix %s deals %d operations an iteration to each of %d clients: about %.1f GiB (%d KiB a client), but this machine has %.1f GiB available: use smaller counts or fewer clients",
			cfg.Value("mix"), deck, clients, need/(1<<30), perClient>>10, gib(available)))
	}
	return config.Usage(fmt.Errorf("%s needs about %.1f GiB (%d KiB a client), but this machine has %.1f GiB available: use fewer clients, or spread them over several driver hosts",
		flag, need/(1<<30), perClient>>10, gib(available)))
}

// scaleFlag is the flag that set the scale: ECperf's --ir, or --scale.
func scaleFlag(f workload.Footprint) string {
	return cmp.Or(f.ScaleFlag, "scale")
}

// fitsOnDisk refuses a load of a fresh SQLite file (the default, or
// --db sqlite:PATH) larger than the free space of its file system; a
// server's disk cannot be seen from here.
func fitsOnDisk(cfg config.Run, info workload.Info) error {
	f := workload.OptionsOf(cfg).Footprint(cfg)
	if cfg.NoLoad || cfg.DB.Dialect != store.SQLite || f.DBBytes == 0 {
		return nil
	}
	dir := os.TempDir()
	if !cfg.DB.Temp {
		dir = filepath.Dir(cfg.DB.Path)
	}
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return nil
	}
	free := int64(fs.Bavail) * fs.Bsize
	need := f.DBBytes
	if need <= free {
		return nil
	}
	return config.Usage(fmt.Errorf("--%s %d loads about %.1f GiB, but %s has %.1f GiB free: use a smaller scale, or --db elsewhere",
		scaleFlag(f), cfg.Scale, gib(need), dir, gib(free)))
}

func gib(b int64) float64 { return float64(b) / (1 << 30) }

// availableMemory is Linux's MemAvailable; false where it cannot be read.
func availableMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
