package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/failpoint"
	"github.com/tierbench/tierbench/internal/result"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// A SQLite run whose filesystem fills up once the clients start: its
// result and summary say why the writes failed (disk_full, with the
// database's message), not only how many.
func TestDiskFullRunSaysWhy(t *testing.T) {
	bin := testsvc.Binary(t)
	fs := testsvc.SmallFS(t, 8<<20)
	out := filepath.Join(t.TempDir(), "result.json")
	p := testsvc.StartEnv(t, []string{failpoint.Env + "=run=print"}, bin, "run", "stockonline",
		"--db", "sqlite:"+filepath.Join(fs, "db.sqlite"), "--clients", "4", "--duration", "3s", "--ramp-up", "0s", "--out", out)
	if err := p.WaitFor("failpoint run", 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	testsvc.Fill(t, fs)
	code, err := p.Wait(time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1 (too many errors)", code)
	}
	r, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var full int64
	for _, name := range r.OperationOrder {
		op := r.Operations[name]
		if got := op.Failures.Total(); got != op.Errors+op.InDoubt {
			t.Errorf("%s: %d failures by class, %d errors and %d in doubt", name, got, op.Errors, op.InDoubt)
		}
		if c, ok := op.Failures["disk_full"]; ok {
			full += c.Count
			if !strings.Contains(c.Sample, "database or disk is full") {
				t.Errorf("%s: disk_full sample %q, want SQLite's message", name, c.Sample)
			}
		}
	}
	if full == 0 || full != r.Summary.Errors {
		t.Errorf("%d disk_full failures of %d errors; want all of them", full, r.Summary.Errors)
	}
	if s := p.Stdout(); !strings.Contains(s, "failures by class") || !strings.Contains(s, "disk_full") {
		t.Errorf("the summary names no disk_full failures:\n%s", s)
	}
}
