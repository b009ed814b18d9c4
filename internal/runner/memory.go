package runner

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/tierbench/tierbench/internal/config"
)

// bytesPerClient is what one emulated client costs the driver's process,
// measured: the peak resident set of Stock-Online runs with 20,000 and
// 80,000 clients (one iteration, direct SQL) grew by 28.6 KiB a client
// (docs/performance.md); rounded up.
const bytesPerClient = 32 << 10

// fitsInMemory refuses, before anything runs, more clients than this
// machine's available memory holds at the measured cost per client: such
// a run would end in the Go runtime's "out of memory", with no result.
func fitsInMemory(cfg config.Run) error {
	available, ok := availableMemory()
	if !ok {
		return nil
	}
	need := int64(cfg.Clients) * bytesPerClient
	if need <= available*9/10 {
		return nil
	}
	return config.Usage(fmt.Errorf("--clients %d needs about %.1f GiB (%d KiB a client), but this machine has %.1f GiB available: use fewer clients, or spread them over several driver hosts",
		cfg.Clients, gib(need), bytesPerClient>>10, gib(available)))
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
