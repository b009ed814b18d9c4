package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
)

// testOptions stand for a workload's options (workload.Options): two
// keys results have always carried, warmup in its old place, and one
// added since.
type testOptions struct {
	Mix        string  `yaml:"mix" json:"mix,omitempty" help:"the mix"`
	CycleScale float64 `yaml:"cycle-scale" json:"cycle-scale,omitempty" help:"cycles"`
	Warmup     bool    `yaml:"warmup" json:"warmup" help:"warm up"`
	Fresh      int     `yaml:"fresh" json:"fresh,omitempty" help:"an option added since"`
}

func valid() Run {
	r := New("stockonline", Defaults{Clients: 100, ServerThreads: 10, Iterations: 10})
	r.Options = testOptions{Mix: "table-2", CycleScale: 1}
	return r
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
		{"app servers", func(r *Run) { r.AppServers = MaxAppServers + 1 }, []string{"--app-servers 33", "allowed: 1 to 32"}},
		{"balancer", func(r *Run) { r.Balancer = "nginx" }, []string{`--balancer "nginx"`, "allowed: haproxy"}},
		{"cache url", func(r *Run) { r.CacheURL = "http://127.0.0.1:6379" }, []string{"--cache-url", "redis://HOST:PORT"}},
		{"coherence broker", func(r *Run) { r.CoherenceBroker = "redis://127.0.0.1:4222" }, []string{"--coherence-broker", "nats://HOST:PORT"}},
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
		"clinets: 20\n":                             "line 1: unknown key clinets (keys are the flag names of stockonline: workload, db, scale, clients",
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
		{"unknown mode", func(r *Run) { r.Placement = "both" }, `--placement "both": allowed: mixed, dual, hosts`},
		{"settings", func(r *Run) { r.Placement, r.PGSettings = "mixed", []string{"shared_buffers=256MB", "fsync=off"} }, ""},
		{"settings without a placement", func(r *Run) { r.PGSettings = []string{"fsync=off"} }, "--pg-setting fsync=off: applies to the private PostgreSQL server of --placement mixed|dual|hosts"},
		{"a setting without a value", func(r *Run) { r.Placement, r.PGSettings = "mixed", []string{"fsync"} }, `--pg-setting "fsync": want NAME=VALUE`},
		{"with --db", func(r *Run) {
			r.Placement, r.DB = "dual", store.MustParseDSN("postgres://root@127.0.0.1:5432/test")
		}, "--placement starts its own PostgreSQL server for the run (SQLite, a file inside tierbench's processes, cannot be placed on a CPU or a host of its own); leave --db unset"},
		{"with a SQLite file", func(r *Run) { r.Placement, r.DB = "mixed", store.MustParseDSN("sqlite:/tmp/x.db") }, "leave --db unset"},
		{"with --no-load", func(r *Run) { r.Placement, r.NoLoad = "mixed", true }, "--no-load: --placement starts an empty PostgreSQL server"},
		{"hosts", func(r *Run) { r.Placement = "hosts" }, ""},
		{"hosts with a link and a cut", func(r *Run) { r.Placement, r.Link, r.Partition = "hosts", "100mbit,0.5ms", "2s,5s" }, ""},
		{"hosts on SQLite", func(r *Run) { r.Placement, r.DB = "hosts", store.MustParseDSN("sqlite:/tmp/x.db") }, "SQLite, a file inside tierbench's processes, cannot be placed"},
		{"a link without hosts", func(r *Run) { r.Placement, r.Link = "dual", "100mbit" }, "--link 100mbit joins the hosts of --placement hosts; give --placement hosts, or drop --link"},
		{"a cut without hosts", func(r *Run) { r.Partition = "2s,5s" }, "--partition 2s,5s joins the hosts of --placement hosts"},
		{"a bad link", func(r *Run) { r.Placement, r.Link = "hosts", "100mbit,-1ms" }, `--link "100mbit,-1ms": delay -1ms out of range`},
		{"a bad cut", func(r *Run) { r.Placement, r.Partition = "hosts", "5s" }, `--partition "5s": want AT,FOR`},
		{"a cut of no length", func(r *Run) { r.Placement, r.Partition = "hosts", "2s,0s" }, `--partition "2s,0s": want AT,FOR`},
		{"hosts over app servers", func(r *Run) { r.Placement, r.AppServers = "hosts", 2 }, "--placement hosts puts one middle tier on hosts of its own"},
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
	if err := CheckKeys([]string{"placement", "db"}); err == nil || !strings.Contains(err.Error(), "leave --db unset") {
		t.Errorf("CheckKeys(placement, db) = %v", err)
	}
	if err := CheckKeys([]string{"placement"}); err != nil {
		t.Errorf("--placement refused for rubis: %v", err)
	}
}

// A workload's options are keys as Run's are: set by a -f file (a refusal
// lists them among the keys), overlaid by flags, and remembered as given.
func TestOptionsAreKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.yaml")
	os.WriteFile(path, []byte("clients: 3\nmix: UpdateAccount=1\nfresh: 4\n"), 0o644)
	r := valid()
	if err := r.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if o := r.Options.(testOptions); o.Mix != "UpdateAccount=1" || o.Fresh != 4 || o.CycleScale != 1 || r.Clients != 3 || !r.Given("mix") || r.Given("cycle-scale") {
		t.Fatalf("after the file: %+v, options %+v", r, r.Options)
	}
	flags := Run{Options: testOptions{CycleScale: 0.5, Mix: "ignored"}}
	r.Overlay(&flags, []string{"cycle-scale"})
	if o := r.Options.(testOptions); o.CycleScale != 0.5 || o.Mix != "UpdateAccount=1" {
		t.Errorf("overlay of --cycle-scale: options %+v", o)
	}
	if v := r.Value("cycle-scale"); v != "0.5" {
		t.Errorf("Value(cycle-scale) = %q", v)
	}
	// A copy's options are its own.
	c := r
	c.Overlay(&Run{Options: testOptions{Fresh: 9}}, []string{"fresh"})
	if r.Options.(testOptions).Fresh != 4 {
		t.Errorf("a copy's overlay changed the original's options: %+v", r.Options)
	}
	os.WriteFile(path, []byte("ir: 3\n"), 0o644)
	if err := r.LoadFile(path); err == nil || !strings.Contains(err.Error(), "unknown key ir (keys are the flag names of stockonline: ") || !strings.Contains(err.Error(), "mix, cycle-scale, warmup, fresh") {
		t.Errorf("a key of no option: %v", err)
	}
}

// A result's config is written as it always was: Run's keys, warmup before
// no-load, the keys of every workload in their old order (another
// workload's with the value they used to have), then options added since;
// and read back, each workload's options from it.
func TestOptionsWrittenInTheResultsOrder(t *testing.T) {
	r := valid()
	r.Options = testOptions{Mix: "table-2", CycleScale: 0.5, Warmup: true, Fresh: 2}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{
		`"entity":null,"warmup":true,"no-load":false,"out":"","quiet":false,"dispatch":"generated","po-dispatch":"sync","receiver":"127.0.0.1:0","cycle-scale":0.5,"mix":"table-2","think-scale":1,`,
		`"front":"soap","shipping-agents":2,"fresh":2}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("written as\n%s\nwant it to hold\n%s", got, want)
		}
	}
	var back Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Options != nil || back.Clients != r.Clients {
		t.Fatalf("read back as %+v", back)
	}
	if err := back.DecodeOptions(testOptions{Mix: "default", CycleScale: 9}); err != nil {
		t.Fatal(err)
	}
	if back.Options != r.Options {
		t.Errorf("options read back as %+v, want %+v", back.Options, r.Options)
	}
	// Without options (a workload with none), every key as before.
	r.Options = nil
	b, _ = json.Marshal(r)
	if !strings.Contains(string(b), `"warmup":false,"no-load":false`) || !strings.Contains(string(b), `"mix":"bidding","think-scale":1,"protocol":"http","tiers":1,"po-senders":16,`) {
		t.Errorf("without options: %s", b)
	}
}

// --partition-db-node names a node of a MySQL --db of several nodes, and
// when and for how long it is cut; anything else is refused with the form
// it wants.
func TestParsePartitionDBNode(t *testing.T) {
	galera, err := store.ParseDSN("mysql://root@127.0.0.1:4306,127.0.0.1:4307,127.0.0.1:4308/test")
	if err != nil {
		t.Fatal(err)
	}
	node, at, dur, err := ParsePartitionDBNode("2, 2s, 3s", galera)
	if err != nil || node != 2 || at != 2*time.Second || dur != 3*time.Second {
		t.Errorf("2, 2s, 3s: node %d at %v for %v, %v", node, at, dur, err)
	}
	for _, c := range []struct{ value, db, want string }{
		{"3,2s,3s", galera.String(), "want N,AT,FOR: the node (0 to 2"},
		{"-1,2s,3s", galera.String(), "want N,AT,FOR"},
		{"1,2s", galera.String(), "want N,AT,FOR"},
		{"1,2s,0s", galera.String(), "want N,AT,FOR"},
		{"x,2s,3s", galera.String(), "want N,AT,FOR"},
		{"0,2s,3s", "mysql://root@127.0.0.1:3306/test", "cuts a node of a Galera cluster"},
		{"0,2s,3s", "sqlite", "cuts a node of a Galera cluster"},
	} {
		db, err := store.ParseDSN(c.db)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := ParsePartitionDBNode(c.value, db); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s on %s: %v; want an error saying %q", c.value, c.db, err, c.want)
		}
	}
}
