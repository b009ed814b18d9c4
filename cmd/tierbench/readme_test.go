package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// example is one ```sh block of the README or a guide in docs/ and how
// it is marked.
type example struct {
	file    string
	line    int // of the block's first command
	section string
	mark    string // "quick", "not-run: REASON", or "" (unmarked)
	cmds    [][]string
}

// exampleMark is the HTML comment on the line before a block.
var exampleMark = regexp.MustCompile(`^<!-- example: (quick|not-run: \S.*) -->$`)

// readmeExamples reads the README's shell blocks: the tierbench commands
// in each (go run ./cmd/tierbench or tierbench), continuation lines
// joined and comments dropped.
func readmeExamples(t *testing.T, path string) []example {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []example
	var cur *example
	section, prev, pending := "", "", ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case cur == nil && trimmed == "```sh":
			cur = &example{file: path, line: n, section: section}
			if m := exampleMark.FindStringSubmatch(prev); m != nil {
				cur.mark = m[1]
			}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			if i := strings.Index(trimmed, " #"); i >= 0 {
				trimmed = strings.TrimSpace(trimmed[:i])
			}
			if strings.HasSuffix(trimmed, `\`) {
				pending += strings.TrimSuffix(trimmed, `\`) + " "
				continue
			}
			cmd := strings.Fields(pending + trimmed)
			pending = ""
			switch {
			case len(cmd) > 3 && cmd[0] == "go" && cmd[1] == "run" && cmd[2] == "./cmd/tierbench":
				cur.cmds = append(cur.cmds, cmd[3:])
			case len(cmd) > 1 && cmd[0] == "tierbench":
				cur.cmds = append(cur.cmds, cmd[1:])
			}
		}
		if trimmed != "" {
			prev = trimmed
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The examples marked quick, in the README and in the guides of docs/,
// run as written and pass (exit 0): "everything in 20 seconds" exited 1
// on a mix rule a 20-second run cannot judge. Each runs with the built
// binary in a fresh directory; the shared servers' test databases are
// swapped for a schema or database of the test's own. Every block of the
// README's Quick start is marked, quick or not-run with its reason, so a
// new example is placed knowingly; the Quick start's run must be one of
// the quick ones, as the first command a newcomer types. Beside the other
// tests: its runs (over a minute of them) wait on fixed lengths and on
// the servers, use no fixed port, and the databases are its own.
func TestREADMEExamplesRunAsWritten(t *testing.T) {
	t.Parallel()
	examples := readmeExamples(t, "../../README.md")
	firstScreen := false
	for _, ex := range examples {
		if ex.section == "Quick start" && len(ex.cmds) > 0 && ex.mark == "" {
			t.Errorf("README line %d: a Quick start example without <!-- example: quick --> or <!-- example: not-run: REASON --> before it", ex.line)
		}
		if ex.section == "Quick start" && ex.mark == "quick" && len(ex.cmds) > 0 && ex.cmds[0][0] == "run" {
			firstScreen = true
		}
	}
	if !firstScreen {
		t.Errorf("README: the Quick start has no run marked <!-- example: quick -->")
	}
	guides, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guides {
		examples = append(examples, readmeExamples(t, g)...)
	}
	var quick []example
	for _, ex := range examples {
		if ex.mark == "quick" {
			quick = append(quick, ex)
		}
	}
	if len(quick) < 3 {
		t.Fatalf("%d blocks marked quick; want the Quick start's, docs/stockonline.md's and ECperf's 20-second run", len(quick))
	}
	// The marks are checked above in make test; running the blocks (a
	// 30-second run, a 20-second ECperf) is make test-all's.
	testsvc.SkipUnlessLong(t, "runs every quick README example, timed runs included")
	bin := testsvc.Binary(t)
	pg, my := storetest.Postgres(t), storetest.MySQL(t)
	dir := t.TempDir()
	began := time.Now()
	for _, ex := range quick {
		for _, args := range ex.cmds {
			for i, a := range args {
				a = strings.ReplaceAll(a, "postgres://root@127.0.0.1:5432/test", pg)
				args[i] = strings.ReplaceAll(a, "mysql://root@127.0.0.1:3306/test", my)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = dir
			start := time.Now()
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("%s line %d: tierbench %s: %v\n%s", strings.TrimPrefix(ex.file, "../../"), ex.line, strings.Join(args, " "), err, out)
			}
			t.Logf("%5.1fs tierbench %s", time.Since(start).Seconds(), strings.Join(args, " "))
		}
	}
	t.Logf("%d quick blocks ran in %v", len(quick), time.Since(began).Round(time.Second))
	results, _ := filepath.Glob(filepath.Join(dir, "results", "*.json"))
	if len(results) == 0 {
		t.Fatalf("the examples wrote nothing in results/")
	}
	named, _ := filepath.Glob(filepath.Join(dir, "*.json")) // --out FILE
	results = append(results, named...)
	// What real runs wrote, of every workload the examples run, is what
	// docs/result.schema.json describes.
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile("../../docs/result.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		f, err := os.Open(r)
		if err != nil {
			t.Error(err)
			continue
		}
		v, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err == nil {
			err = schema.Validate(v)
		}
		if err != nil {
			t.Errorf("%s does not validate against docs/result.schema.json: %v", filepath.Base(r), err)
		}
	}
}
