package main

import (
	"os"
	"path/filepath"
	"regexp"
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

// --out on a filesystem with room for an empty file but not the result:
// the run goes ahead (the up-front check passes), its result is written
// whole to a fallback file in the temporary directory, whose path is
// printed; nothing partial is left where --out pointed; exit 3.
func TestOutOnAFullFilesystemFallsBack(t *testing.T) {
	bin := testsvc.Binary(t)
	fs := testsvc.SmallFS(t, 8<<10)
	tmp := t.TempDir()
	p := testsvc.StartEnv(t, []string{"TMPDIR=" + tmp}, bin, "run", "stockonline", "--clients", "2", "--iterations", "1", "--out", filepath.Join(fs, "r.json"))
	code, err := p.Wait(2 * time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit code %d, want 3 (infrastructure: the result could not be written where asked)", code)
	}
	if entries, _ := os.ReadDir(fs); len(entries) != 0 {
		t.Errorf("left in the full filesystem: %v, want nothing", entries)
	}
	m := regexp.MustCompile(`(?m)^result: (.+)$`).FindStringSubmatch(p.Stdout())
	if m == nil || filepath.Dir(m[1]) != tmp {
		t.Fatalf("no \"result: %s/…\" line in the output:\n%s", tmp, p.Stdout())
	}
	if !strings.Contains(p.Stderr(), "no space left on device; it was written to "+m[1]+" instead") {
		t.Errorf("stderr does not say why and where:\n%s", p.Stderr())
	}
	r, err := result.ReadFile(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.Operations == 0 || len(r.Checks) != 5 {
		t.Errorf("fallback result: %d operations, %d checks; want the whole run", r.Summary.Operations, len(r.Checks))
	}
	rep := testsvc.Start(t, bin, "report", "--no-html", m[1])
	if code, err := rep.Wait(time.Minute); err != nil || code != 0 {
		t.Errorf("report of the fallback result: exit %d, %v:\n%s", code, err, rep.Stderr())
	}
}
