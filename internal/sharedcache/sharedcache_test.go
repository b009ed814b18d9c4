package sharedcache

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/testsvc"
)

// every is a type with a field of each kind and a version.
func every() *container.Type {
	return &container.Type{Name: "Every", Table: "every",
		Key: []container.Column{{Name: "a", Kind: container.Int}, {Name: "s", Kind: container.String}, {Name: "b", Kind: container.Int}},
		Fields: []container.Column{{Name: "i", Kind: container.Int}, {Name: "f", Kind: container.Float}, {Name: "s", Kind: container.String},
			{Name: "t", Kind: container.Time}, {Name: "b", Kind: container.Bytes}, {Name: "n", Kind: container.Bytes}, {Name: "z", Kind: container.Time}},
		Version: "version"}
}

func everyState() []container.Value {
	return []container.Value{{I: -42}, {F: 3.25}, {S: "naïve: a:b"}, {T: time.Date(2026, 12, 2, 6, 0, 0, 123, time.FixedZone("", 3600))},
		{B: []byte{}}, {B: nil}, {T: time.Time{}}}
}

// The encoding gives back every kind as it was: an empty byte slice apart
// from nil (a NULL), a zero time, a time's zone offset; a truncated or
// foreign value is an error, never a panic.
func TestCodecRoundTrip(t *testing.T) {
	typ, in := every(), everyState()
	b := appendState(nil, typ, in, 7)
	out := make([]container.Value, len(typ.Fields))
	var version int64
	if err := decodeState(b, typ, out, &version); err != nil {
		t.Fatal(err)
	}
	if version != 7 {
		t.Errorf("version %d, want 7", version)
	}
	for f := range in {
		a, z := in[f], out[f]
		if a.I != z.I || a.F != z.F || a.S != z.S || !a.T.Equal(z.T) || (a.B == nil) != (z.B == nil) || string(a.B) != string(z.B) {
			t.Errorf("field %s: %+v came back as %+v", typ.Fields[f].Name, a, z)
		}
	}
	if _, off := out[3].T.Zone(); off != 3600 {
		t.Errorf("the time's zone offset came back %d, want 3600", off)
	}
	for n := range len(b) {
		if err := decodeState(b[:n], typ, out, &version); err == nil {
			t.Errorf("%d of %d bytes decoded without an error", n, len(b))
		}
	}
	if err := decodeState(append(slices.Clone(b), 0), typ, out, &version); err == nil {
		t.Error("a trailing byte decoded without an error")
	}
}

// Keys name the run, the type and every key column in declaration order.
func TestKeys(t *testing.T) {
	c := &Cache{prefix: "tierbench:r1:"}
	if got := c.key(every(), container.Key{A: 1, B: -2, S: "x:y"}); got != "tierbench:r1:Every:1:x:y:-2" {
		t.Errorf("key %q", got)
	}
}

// Clear removes the run's keys and nothing else: another run's on the
// same Redis stay.
func TestClearRemovesOnlyTheRunsKeys(t *testing.T) {
	rawURL, run := testsvc.Redis(t)
	ctx := context.Background()
	mine, err := Open(ctx, rawURL, Options{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	other, err := Open(ctx, rawURL, Options{Run: run + "-other", ClearAtClose: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	typ := every()
	for k := range int64(3) {
		for _, c := range []*Cache{mine, other} {
			if ok, err := c.Fill(ctx, typ, container.Key{A: k}, 0, everyState(), 1); err != nil || !ok {
				t.Fatalf("fill: %v, %v", ok, err)
			}
		}
	}
	if err := mine.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	out := make([]container.Value, len(typ.Fields))
	var version int64
	for k := range int64(3) {
		if r, err := mine.Read(ctx, typ, container.Key{A: k}, out, &version); err != nil || r.Hit {
			t.Errorf("key %d of the cleared run: %+v, %v; want gone", k, r, err)
		}
		if r, err := other.Read(ctx, typ, container.Key{A: k}, out, &version); err != nil || !r.Hit || version != 1 {
			t.Errorf("key %d of the other run: %+v, %v, version %d; want kept", k, r, err, version)
		}
	}
}

// An unreachable server is an error that names it, without its password.
func TestOpenUnreachableNamesTheURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Open(ctx, "redis://user:secret@127.0.0.1:1/0", Options{Run: "x"})
	if err == nil {
		t.Fatal("opened a Redis on port 1")
	}
	if msg := err.Error(); !strings.Contains(msg, "redis://user:xxxxx@127.0.0.1:1/0 unreachable") || strings.Contains(msg, "secret") {
		t.Errorf("error %q: want the URL named, its password left out", msg)
	}
}

// BenchmarkCodec compares the encoding with JSON on a Stock-Online
// account's state (a name, a credit, a version).
func BenchmarkCodec(b *testing.B) {
	typ := &container.Type{Name: "Account", Fields: []container.Column{{Name: "name", Kind: container.String}, {Name: "credit", Kind: container.Float}}, Version: "version"}
	state := []container.Value{{S: "account 1234"}, {F: 10023.5}}
	out := make([]container.Value, 2)
	var version int64
	b.Run("binary", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendState(buf[:0], typ, state, 3)
			if err := decodeState(buf, typ, out, &version); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes/value")
	})
	b.Run("json", func(b *testing.B) {
		type jsonState struct {
			Version int64
			Fields  []container.Value
		}
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = json.Marshal(jsonState{3, state}); err != nil {
				b.Fatal(err)
			}
			var back jsonState
			if err := json.Unmarshal(buf, &back); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes/value")
	})
}

// Writes through arrive in any order, the database having ordered them by
// version: a later version is never replaced by an earlier one (which
// drops it instead), a remove
// keeps every earlier write from coming back, and a state filled from the
// database keeps an earlier write from replacing it.
func TestWriteThroughKeepsTheLatestVersion(t *testing.T) {
	rawURL, run := testsvc.Redis(t)
	ctx := context.Background()
	c, err := Open(ctx, rawURL, Options{Run: run, ClearAtClose: true, NoNearCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	typ := &container.Type{Name: "Acct", Key: []container.Column{{Name: "id", Kind: container.Int}},
		Fields: []container.Column{{Name: "credit", Kind: container.Int}}, Version: "version"}
	write := func(key, credit, version int64) {
		t.Helper()
		id := container.SharedID{Type: typ, Key: container.Key{A: key}, Version: version, Written: []container.Value{{I: credit}}}
		if err := c.Invalidate(ctx, []container.SharedID{id}); err != nil {
			t.Fatal(err)
		}
	}
	read := func(key int64) (credit, version int64, hit bool) {
		t.Helper()
		vals := make([]container.Value, 1)
		r, err := c.Read(ctx, typ, container.Key{A: key}, vals, &version)
		if err != nil {
			t.Fatal(err)
		}
		return vals[0].I, version, r.Hit
	}
	write(1, 160, 6)
	write(1, 170, 7)
	if credit, version, hit := read(1); !hit || credit != 170 || version != 7 {
		t.Errorf("after versions 6 then 7: %d at %d (hit %v); want 170 at 7", credit, version, hit)
	}
	// Committed before, arriving after: dropped, not kept (which state is
	// the latest, the script does not know; the next reader loads it).
	write(1, 160, 6)
	if credit, _, hit := read(1); hit && credit != 170 {
		t.Errorf("after versions 7 then 6: credit %d; want 170 or a miss, never the older", credit)
	}
	// A remove of version 7 (floor 8), then a late write of version 7.
	if err := c.Invalidate(ctx, []container.SharedID{{Type: typ, Key: container.Key{A: 1}, Version: 8}}); err != nil {
		t.Fatal(err)
	}
	write(1, 170, 7)
	if _, _, hit := read(1); hit {
		t.Error("a write older than the remove brought the state back")
	}
	// A fill of version 3 read from the database, then a late write of 2.
	vals := make([]container.Value, 1)
	var version int64
	r, err := c.Read(ctx, typ, container.Key{A: 2}, vals, &version)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Fill(ctx, typ, container.Key{A: 2}, r.Epoch, []container.Value{{I: 30}}, 3); err != nil || !ok {
		t.Fatalf("fill: %v, %v", ok, err)
	}
	write(2, 20, 2)
	if credit, _, hit := read(2); hit && credit != 30 {
		t.Errorf("a late write of version 2 replaced the filled version 3: credit %d", credit)
	}
}
