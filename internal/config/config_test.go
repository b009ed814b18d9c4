package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
)

func valid() Run {
	return New("stockonline", Defaults{Clients: 100, ServerThreads: 10, Iterations: 10})
}

var allPersistence = []container.Persistence{container.CMP, container.BMP, container.BMPChecked, container.Direct}

func TestDefaultsAreValid(t *testing.T) {
	c := valid()
	if errs := c.Validate(allPersistence); len(errs) != 0 {
		t.Fatalf("defaults invalid: %v", errs)
	}
	if c.DB.String() != "sqlite" || !c.DB.Temp || c.Clients != 100 || c.ServerThreads != 10 || c.Iterations != 10 || c.Scale != 1 ||
		c.Persistence != container.CMP || c.CommitOption != container.OptionC || c.Concurrency != "" ||
		c.Isolation != store.ReadCommitted || c.Pool.String() != "20%" || c.Cache.String() != "0" {
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
		{"persistence not built for the workload", func(r *Run) { r.Persistence = container.BMP }, []string{"--persistence bmp", "not available for this workload yet", "available: cmp, direct"}},
		{"ramp-down without duration", func(r *Run) { r.RampDown = Duration(time.Second) }, []string{"--ramp-down 1s needs --duration"}},
		{"ramps too long", func(r *Run) { r.Duration, r.RampUp = Duration(time.Second), Duration(time.Second) }, []string{"no steady state"}},
		{"retries", func(r *Run) { r.Retries = -1 }, []string{"--retries -1"}},
		{"lock timeout", func(r *Run) { r.LockTimeout = 0 }, []string{"--lock-timeout"}},
		{"po dispatch", func(r *Run) { r.PODispatch = "fax" }, []string{`--po-dispatch "fax"`, "sync, poller, queue"}},
		{"po senders", func(r *Run) { r.POSenders = 0 }, []string{"--po-senders 0", "at least 1"}},
		{"broker", func(r *Run) { r.Broker = "http://127.0.0.1:4222" }, []string{"--broker", "nats://HOST:PORT"}},
		{"receiver syntax", func(r *Run) { r.Receiver = "8100" }, []string{`--receiver "8100"`, "HOST:PORT"}},
		{"receiver wildcard", func(r *Run) { r.Receiver = "0.0.0.0:8100" }, []string{`--receiver "0.0.0.0:8100"`, "not every interface"}},
		{"receiver empty host", func(r *Run) { r.Receiver = ":8100" }, []string{`--receiver ":8100"`, "not every interface"}},
		{"style", func(r *Run) { r.Style = "ejb3" }, []string{`--style "ejb3"`, "servlets, session, facade, local, entity"}},
		{"style entity on direct SQL", func(r *Run) { r.Style, r.Persistence = "entity", container.Direct }, []string{"--style entity runs on --persistence cmp or bmp, not direct"}},
		{"style on the wrong persistence", func(r *Run) { r.Style, r.Persistence = "session", container.CMP }, []string{"--style session runs on --persistence direct, not cmp"}},
		{"style facade on direct SQL", func(r *Run) { r.Style, r.Persistence = "facade", container.Direct }, []string{"--style facade runs on --persistence cmp or bmp, not direct"}},
		{"protocol", func(r *Run) { r.Protocol = "rmi" }, []string{`--protocol "rmi"`, "http, grpc"}},
		{"items per category", func(r *Run) { r.ItemsPerCategory = "skewed" }, []string{`--items-per-category "skewed"`, "original", "even"}},
		{"receiver loopback, emulator remote", func(r *Run) { r.Emulator = "http://emu-host:8099" }, []string{`--receiver "127.0.0.1:0" is reachable only from this host`, "emu-host can reach"}},
	}
	for _, tt := range tests {
		r := valid()
		tt.change(&r)
		persistence := allPersistence
		if tt.name == "persistence not built for the workload" {
			persistence = []container.Persistence{container.CMP, container.Direct}
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
		"clinets: 20\n":                             "line 1: unknown key clinets (keys are the flag names: workload, db, scale, clients",
		"duration: soon\n":                          `line 1: --duration "soon" is not a duration`,
		"clients: many\n":                           `line 1: --clients "many": want a whole number`,
		"scale: 2\nclients: 1\nclients: 2\n":        "line 3: clients given again (first on line 2)",
		"db: oracle://x\n":                          `line 1: --db "oracle://x" is not a DSN tierbench knows; allowed: sqlite, sqlite:PATH`,
		"isolation: snapshot\n":                     `line 1: --isolation "snapshot" is not an isolation level; allowed: read-committed, repeatable-read, serializable`,
		"persistence: jpa\n":                        `line 1: --persistence "jpa" is not a persistence strategy; allowed: cmp, bmp, bmp-checked, direct`,
		"commit-option: E\n":                        `line 1: --commit-option "E" is not a commit option; allowed: A, B, C, D`,
		"concurrency: pessimistic\n":                `line 1: --concurrency "pessimistic" is not a concurrency strategy; allowed: database, exclusive, optimistic, readonly`,
		"cache: half\n":                             `line 1: --cache "half" is not a size; give a count (1000) or a percentage of the type's rows (20%)`,
		"pool: -3\n":                                `line 1: --pool "-3" is not a size`,
		"entity: [Item:readonly]\n":                 `line 1: --entity "Item:readonly": write NAME.key=value`,
		"entity: [Item.pool=lots]\n":                `line 1: --entity "Item.pool=lots": "lots" is not a size`,
		"- clients\n":                               "line 1: want keys and their values",
		"scale: 2\ndb: !000000000000\n":             "line 2: db: YAML tag !000000000000 refused; write the value alone (db: VALUE)",
		"clients: !!str 5\n":                        "line 1: clients: YAML tag !!str refused",
		"entity:\n- Item.cache=1\n- !x A.cache=2\n": "line 3: entity: YAML tag !x refused",
		"!x clients: 5\n":                           "line 1: clients: YAML tag !x refused",
	} {
		bad := filepath.Join(dir, "bad.yaml")
		os.WriteFile(bad, []byte(content), 0o644)
		r := valid()
		if err := r.LoadFile(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("file %q: error %v, want one containing %q", content, err, want)
		}
	}
}

// Each setting is parsed once, when read, into the type the program uses:
// what the file says is what the run gets, and it reads back the same.
func TestLoadFileParsesIntoTypedValues(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.yaml")
	os.WriteFile(path, []byte("db: postgres://u:secret@db:5432/x\nisolation: serializable\npersistence: bmp\ncommit-option: A\n"+
		"cache: 50%\npool: 7\nconcurrency: optimistic\nentity: [Item.concurrency=readonly, Account.lock-timeout=2s]\n"), 0o644)
	r := valid()
	if err := r.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if r.DB.Dialect != store.Postgres || r.DB.URL.Host != "db:5432" || r.Isolation != store.Serializable || r.Persistence != container.BMP ||
		r.CommitOption != container.OptionA || r.Cache != (container.Size{Percent: 50, Relative: true}) || r.Pool != (container.Size{N: 7}) ||
		r.Concurrency != container.Optimistic || len(r.Entity) != 2 || r.Entity[1].Type != "Account" || r.Entity[1].Key != "lock-timeout" {
		t.Fatalf("loaded %+v", r)
	}
	if pw, _ := r.DB.URL.User.Password(); pw != "secret" {
		t.Errorf("the password did not reach the DSN: %q", pw)
	}
	s := r.Container()
	if s.CommitOption != container.OptionA || s.Cache != r.Cache || s.Persistence != container.BMP || s.LockTimeout != time.Duration(r.LockTimeout) {
		t.Errorf("container settings %+v", s)
	}
	// Written out (a result's configuration), the password is masked.
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"db":"postgres://u:xxxxx@db:5432/x"`, `"cache":"50%"`, `"commit-option":"A"`, `"entity":["Item.concurrency=readonly","Account.lock-timeout=2s"]`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("written as %s: no %s", out, want)
		}
	}
	if strings.Contains(string(out), "secret") {
		t.Errorf("the password is written out: %s", out)
	}
}

// TestStyleChoosesThePersistence: a style on the entity container, given
// by flag or file without a persistence, runs on CMP; a persistence the
// user gave is kept, and refused when the style cannot run on it.
func TestStyleChoosesThePersistence(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string {
		p := filepath.Join(dir, fmt.Sprintf("f%d.yaml", len(body)))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	direct := func() Run { r := valid(); r.Persistence = container.Direct; return r }
	for _, tc := range []struct {
		name  string
		set   func(r *Run) error
		want  container.Persistence
		valid bool
	}{
		{"flag --style facade", func(r *Run) error { r.Overlay(&Run{Style: "facade"}, []string{"style"}); return nil }, container.CMP, true},
		{"file style: local", func(r *Run) error { return r.LoadFile(file("style: local\n")) }, container.CMP, true},
		{"file style: session", func(r *Run) error { return r.LoadFile(file("style: session\n")) }, container.Direct, true},
		{"file bmp and facade", func(r *Run) error { return r.LoadFile(file("style: facade\npersistence: bmp\n")) }, container.BMP, true},
		{"flag --style entity", func(r *Run) error { r.Overlay(&Run{Style: "entity"}, []string{"style"}); return nil }, container.CMP, true},
		{"file bmp and entity", func(r *Run) error { return r.LoadFile(file("style: entity\npersistence: bmp\n")) }, container.BMP, true},
		{"flags direct and facade", func(r *Run) error {
			r.Overlay(&Run{Style: "facade", Persistence: container.Direct}, []string{"style", "persistence"})
			return nil
		}, container.Direct, false},
	} {
		r := direct()
		if err := tc.set(&r); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r.Normalize()
		errs := r.Validate(allPersistence)
		if r.Persistence != tc.want || (len(errs) == 0) != tc.valid {
			t.Errorf("%s: persistence %s, problems %v; want %s, valid %v", tc.name, r.Persistence, errs, tc.want, tc.valid)
		}
	}
}

// --placement takes mixed or dual, starts a server of its own (no --db,
// no --no-load), and a result's config (db empty) runs again as given.
func TestConfigPlacement(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Run)
		want   string // empty: accepted
	}{
		{"mixed", func(r *Run) { r.Placement = "mixed" }, ""},
		{"dual", func(r *Run) { r.Placement = "dual" }, ""},
		{"a result's config", func(r *Run) { r.Placement, r.DB = "dual", store.DSN{} }, ""},
		{"unknown mode", func(r *Run) { r.Placement = "both" }, `--placement "both": allowed: mixed, dual`},
		{"with --db", func(r *Run) {
			r.Placement, r.DB = "dual", store.MustParseDSN("postgres://root@127.0.0.1:5432/test")
		}, "--placement starts its own PostgreSQL server for the run; leave --db unset"},
		{"with a SQLite file", func(r *Run) { r.Placement, r.DB = "mixed", store.MustParseDSN("sqlite:/tmp/x.db") }, "leave --db unset"},
		{"with --no-load", func(r *Run) { r.Placement, r.NoLoad = "mixed", true }, "--no-load: --placement starts an empty PostgreSQL server"},
	} {
		r := valid()
		tc.change(&r)
		errs := r.Validate(allPersistence)
		switch {
		case tc.want == "" && len(errs) > 0:
			t.Errorf("%s: %v, want accepted", tc.name, errs)
		case tc.want != "" && (len(errs) != 1 || !strings.Contains(errs[0].Error(), tc.want)):
			t.Errorf("%s: %v, want one problem saying %q", tc.name, errs, tc.want)
		}
	}
	// --db sqlite given beside it is refused too, though it is the default.
	if err := CheckKeys("stockonline", []string{"placement", "db"}); err == nil || !strings.Contains(err.Error(), "leave --db unset") {
		t.Errorf("CheckKeys(placement, db) = %v", err)
	}
	if err := CheckKeys("rubis", []string{"placement"}); err != nil {
		t.Errorf("--placement refused for rubis: %v", err)
	}
}
