package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tierbench/tierbench/internal/store"
)

// FuzzYAMLConfig feeds -f files to LoadFile: no panic; a refusal in one
// line naming the file; a key that is not a flag's name is refused, in any
// document of the file; an accepted file sets the same configuration each
// time, which validates the same each time and survives being written out
// and read back.
func FuzzYAMLConfig(f *testing.F) {
	for _, seed := range []string{
		"",
		"# nothing set\n",
		"clients: 20\nduration: 45s\ndb: postgres://root@127.0.0.1:5432/test\n",
		"clinets: 20\n",
		"duration: soon\n",
		"clients: many\n",
		"clients: 1\nclients: 2\n",
		"clients: 1\n---\nclinets: 2\n",
		"entity: [Item.concurrency=readonly, Account.cache=50%]\nwarmup: true\n",
		"threshold: [p99<50ms, BuyStock.p90 < 20ms, \"error_rate<0.1%\"]\n",
		"cycle-scale: .nan\n",
		"seed: -1\n",
		"base: &b {clients: 3}\n",
		"<<: {clients: 3}\nscale: 2\n",
		"[1, 2]\n",
		"~\n",
		"\"a\\nb\": 1\n",
		"\"\": 1\n",
		"think time: 1s\n",
		"clients: \"x\\ny\"\n",
		"ramp-up: 1s\nramp-down: 1s\nduration: 2s\niterations: 0\n",
		"mix: queue\nfresh: 3\nwarmup: true\n",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	path := filepath.Join(dir, "run.yaml")
	keys := func() []string { r := valid(); return r.Keys() }()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r := valid()
		err := r.LoadFile(path)
		unknown, doc := unknownKey(data, keys)
		if unknown != "" && err == nil {
			t.Fatalf("%q: accepted with the unknown key %q", data, unknown)
		}
		if unknown != "" && doc == 0 && !strings.Contains(err.Error(), "unknown key ") {
			t.Fatalf("%q: error %q does not call %q an unknown key", data, err, unknown)
		}
		if err == nil && noDocument(data) && !same(r, valid()) {
			t.Fatalf("%q: a file without a document set %+v", data, r)
		}
		if err != nil {
			if noDocument(data) {
				t.Fatalf("%q: a file without a document (comments alone) refused: %v", data, err)
			}
			if msg := err.Error(); strings.ContainsAny(msg, "\r\n") || !strings.HasPrefix(msg, "-f "+path+": ") {
				t.Fatalf("%q: error %q, want one line naming the file", data, msg)
			}
			return
		}
		again := valid()
		if err := again.LoadFile(path); err != nil || !same(r, again) {
			t.Fatalf("%q: loaded as %+v, then as %+v (%v)", data, r, again, err)
		}
		errs := fmt.Sprint(r.Validate(allPersistence))
		if errs2 := fmt.Sprint(again.Validate(allPersistence)); errs != errs2 {
			t.Fatalf("%q: validates as %s, then as %s", data, errs, errs2)
		}
		// Written out and read back (as a result's configuration is, to
		// be run again), the configuration is the same one.
		out, err := yaml.Marshal(&r)
		if err != nil {
			t.Fatalf("%q: loaded as %+v, which does not marshal: %v", data, r, err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		back := valid()
		// The password is masked when written out.
		masked := r
		masked.DB = store.MustParseDSN(r.DB.String())
		if err := back.LoadFile(path); err != nil || !same(masked, back) {
			t.Fatalf("%q: loaded as %+v, written as %q, read back as %+v (%v)", data, r, out, back, err)
		}
	})
}

// unknownKey is a top-level key of any of data's YAML documents that is
// not a configuration key, and the document's index; empty when there is
// none or data is no YAML.
func unknownKey(data []byte, keys []string) (string, int) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for n := 0; ; n++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return "", 0
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		m := doc.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value != "<<" && !slices.Contains(keys, k.Value) {
				return k.Value, n
			}
		}
	}
}

// noDocument: data holds no YAML document, only comments and space.
func noDocument(data []byte) bool {
	var doc yaml.Node
	return errors.Is(yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc), io.EOF)
}

// same compares configurations, taking a NaN cycle scale (which Validate
// refuses) as equal to itself.
func same(a, b Run) bool {
	ao, aok := a.Options.(testOptions)
	bo, bok := b.Options.(testOptions)
	if aok && bok && ao.CycleScale != ao.CycleScale && bo.CycleScale != bo.CycleScale {
		ao.CycleScale, bo.CycleScale = 0, 0
		a.Options, b.Options = ao, bo
	}
	if len(a.Entity) == 0 && len(b.Entity) == 0 {
		a.Entity, b.Entity = nil, nil
	}
	if len(a.Thresholds) == 0 && len(b.Thresholds) == 0 {
		a.Thresholds, b.Thresholds = nil, nil
	}
	if len(a.Replicas) == 0 && len(b.Replicas) == 0 {
		a.Replicas, b.Replicas = nil, nil
	}
	if len(a.PGSettings) == 0 && len(b.PGSettings) == 0 {
		a.PGSettings, b.PGSettings = nil, nil
	}
	// Whether the persistence was given says how a value came, not what
	// it is: a written-out configuration gives every key.
	a.given, b.given = nil, nil
	return reflect.DeepEqual(a, b)
}
