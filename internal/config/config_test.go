package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func valid() Run {
	return New("stockonline", Defaults{Clients: 100, ServerThreads: 10, Iterations: 10})
}

var allPersistence = []string{"cmp", "bmp", "bmp-checked", "direct"}

func TestDefaultsAreValid(t *testing.T) {
	c := valid()
	if errs := c.Validate(allPersistence); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	if c.DB != "sqlite" || c.Clients != 100 || c.ServerThreads != 10 || c.Iterations != 10 || c.Scale != 1 ||
		c.Persistence != "cmp" || c.CommitOption != "C" || c.Concurrency != "database" {
		t.Errorf("defaults = %+v, want the paper's", c)
	}
}

func TestValidateNamesFieldAndAllowedValues(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Run)
		want   []string
	}{
		{"clients", func(r *Run) { r.Clients = 0 }, []string{"--clients 0", "at least 1"}},
		{"server threads", func(r *Run) { r.ServerThreads = -1 }, []string{"--server-threads -1"}},
		{"scale", func(r *Run) { r.Scale = 0 }, []string{"--scale 0"}},
		{"iterations", func(r *Run) { r.Iterations = 0 }, []string{"--iterations 0", "--duration"}},
		{"dsn", func(r *Run) { r.DB = "oracle://x" }, []string{"oracle://x", "allowed: sqlite, sqlite:PATH"}},
		{"isolation", func(r *Run) { r.Isolation = "snapshot" }, []string{"--isolation", "read-committed, repeatable-read, serializable"}},
		{"persistence not built for the workload", func(r *Run) { r.Persistence = "bmp" }, []string{"--persistence bmp", "not available for this workload yet", "available: cmp, direct"}},
		{"persistence unknown", func(r *Run) { r.Persistence = "jpa" }, []string{`--persistence "jpa"`, "cmp, bmp, bmp-checked, direct"}},
		{"ramp-down without duration", func(r *Run) { r.RampDown = Duration(time.Second) }, []string{"--ramp-down 1s needs --duration"}},
		{"ramps too long", func(r *Run) { r.Duration, r.RampUp = Duration(time.Second), Duration(time.Second) }, []string{"no steady state"}},
		{"retries", func(r *Run) { r.Retries = -1 }, []string{"--retries -1"}},
		{"commit option", func(r *Run) { r.CommitOption = "E" }, []string{"--commit-option", `"E"`, "A, B, C, D"}},
		{"concurrency", func(r *Run) { r.Concurrency = "pessimistic" }, []string{"--concurrency", "database, exclusive, optimistic, readonly"}},
		{"cache", func(r *Run) { r.Cache = "half" }, []string{"--cache", `"half"`, "20%"}},
		{"pool", func(r *Run) { r.Pool = "-3" }, []string{"--pool", `"-3"`}},
		{"entity syntax", func(r *Run) { r.Entity = []string{"Item:readonly"} }, []string{`--entity "Item:readonly"`, "NAME.key=value"}},
		{"lock timeout", func(r *Run) { r.LockTimeout = 0 }, []string{"--lock-timeout"}},
		{"po dispatch", func(r *Run) { r.PODispatch = "fax" }, []string{`--po-dispatch "fax"`, "sync, poller, queue"}},
		{"po senders", func(r *Run) { r.POSenders = 0 }, []string{"--po-senders 0", "at least 1"}},
		{"broker", func(r *Run) { r.Broker = "http://127.0.0.1:4222" }, []string{"--broker", "nats://HOST:PORT"}},
		{"receiver syntax", func(r *Run) { r.Receiver = "8100" }, []string{`--receiver "8100"`, "HOST:PORT"}},
		{"receiver wildcard", func(r *Run) { r.Receiver = "0.0.0.0:8100" }, []string{`--receiver "0.0.0.0:8100"`, "not every interface"}},
		{"receiver empty host", func(r *Run) { r.Receiver = ":8100" }, []string{`--receiver ":8100"`, "not every interface"}},
		{"receiver loopback, emulator remote", func(r *Run) { r.Emulator = "http://emu-host:8099" }, []string{`--receiver "127.0.0.1:0" is reachable only from this host`, "emu-host can reach"}},
	}
	for _, tt := range tests {
		r := valid()
		tt.change(&r)
		persistence := allPersistence
		if tt.name == "persistence not built for the workload" {
			persistence = []string{"cmp", "direct"}
		}
		errs := r.Validate(persistence)
		if len(errs) != 1 {
			t.Errorf("%s: %d problems %v, want 1", tt.name, len(errs), errs)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(errs[0].Error(), w) {
				t.Errorf("%s: %q does not say %q", tt.name, errs[0], w)
			}
		}
	}
	for _, ok := range []struct{ receiver, emulator string }{
		{"127.0.0.1:0", ""}, {"127.0.0.1:0", "http://127.0.0.1:8099"}, {"localhost:8100", "http://localhost:8099"},
		{"10.0.0.5:8100", "http://emu-host:8099"}, {"driver-host:0", "http://10.0.0.7:8099"},
	} {
		r := valid()
		r.Receiver, r.Emulator = ok.receiver, ok.emulator
		if errs := r.Validate(allPersistence); len(errs) != 0 {
			t.Errorf("--receiver %s with --emulator %q: %v, want accepted", ok.receiver, ok.emulator, errs)
		}
	}
	r := valid()
	r.Clients, r.Scale = 0, 0
	if errs := r.Validate(allPersistence); len(errs) != 2 {
		t.Errorf("two bad fields gave %d problems, want both reported", len(errs))
	}
}

func TestLoadFileIsStrictAndFlagsOverride(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("clients: 20\nduration: 45s\ndb: postgres://root@127.0.0.1:5432/test\n"), 0o644)
	r := valid()
	if err := r.LoadFile(good); err != nil {
		t.Fatal(err)
	}
	if r.Clients != 20 || time.Duration(r.Duration) != 45*time.Second || r.ServerThreads != 10 {
		t.Errorf("after file: %+v", r)
	}
	flags := Run{Clients: 7, ServerThreads: 99}
	r.Overlay(&flags, []string{"clients"})
	if r.Clients != 7 || r.ServerThreads != 10 {
		t.Errorf("overlay of --clients: clients %d, server threads %d; want 7, 10 (unset flags leave the file alone)", r.Clients, r.ServerThreads)
	}

	for content, want := range map[string]string{
		"clinets: 20\n":    "line 1: unknown key clinets (keys are the flag names: workload, db, scale, clients",
		"duration: soon\n": `"soon" is not a duration`,
		"clients: many\n":  "cannot unmarshal",
	} {
		bad := filepath.Join(dir, "bad.yaml")
		os.WriteFile(bad, []byte(content), 0o644)
		r := valid()
		if err := r.LoadFile(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("file %q: error %v, want one containing %q", content, err, want)
		}
	}
}
