package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierbench/tierbench/internal/store/storetest"
)

// ECperf under --lock-granularity table on MariaDB: every transaction
// locks the database's tables, and the run still passes all its
// consistency checks (validity, a matter of speed, may fail on a loaded
// machine: exit 0 or 1); the result records the granularity.
func TestECperfWithTableLocks(t *testing.T) {
	t.Parallel()
	dsn := storetest.MySQL(t)
	out := filepath.Join(t.TempDir(), "ecperf.json")
	code, stdout, stderr := runCLI(t, "run", "ecperf", "--db", dsn, "--lock-granularity", "table", "--isolation", "repeatable-read",
		"--ir", "1", "--duration", "4s", "--cycle-scale", "0.1", "--emulator-delay", "10ms", "--po-dispatch", "sync", "--quiet", "--out", out)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	if !strings.Contains(stdout, "repeatable-read, table locks") {
		t.Errorf("the summary does not say the run locked tables:\n%s", stdout)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Config      map[string]any `json:"config"`
		Environment struct {
			LockGranularity string `json:"lock_granularity"`
		} `json:"environment"`
		Database struct {
			Transactions int64 `json:"transactions"`
		} `json:"database"`
		Checks []struct {
			Name   string `json:"name"`
			Passed bool   `json:"passed"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if r.Environment.LockGranularity != "table" || r.Config["lock-granularity"] != "table" {
		t.Errorf("result records lock granularity %q (environment), %v (config); want table", r.Environment.LockGranularity, r.Config["lock-granularity"])
	}
	if r.Database.Transactions == 0 {
		t.Error("no transactions ran")
	}
	if len(r.Checks) != 6 {
		t.Errorf("%d checks, want ECperf's 6", len(r.Checks))
	}
	for _, c := range r.Checks {
		if !c.Passed {
			t.Errorf("check %s failed: %s", c.Name, c.Detail)
		}
	}
}
