package container

import (
	"strings"
	"testing"
)

func TestCachingAcrossAppServersNeedsCoherence(t *testing.T) {
	written := &Type{Name: "Account", Updated: true}
	readOnly := &Type{Name: "Stock"}
	// Created, never updated, found by a finder: its cached results miss
	// the others' creates, unless the type is read-only.
	created := &Type{Name: "Bid", Finders: []Finder{{Name: "byItem", Where: "item = ?", Many: true}}}
	for _, tt := range []struct {
		t           *Type
		option      CommitOption
		coherence   Coherence
		servers     int
		refused     bool
		concurrency Concurrency
	}{
		{created, OptionA, "", 2, true, Exclusive},
		{created, OptionA, "", 2, false, ReadOnly},
		{created, OptionA, Invalidate, 2, false, Exclusive},
		{written, OptionA, "", 1, false, ""},
		{written, OptionA, "", 2, true, ""},
		{written, OptionD, NoCoherence, 4, true, ""},
		{written, OptionA, Invalidate, 2, false, ""},
		{written, OptionA, InvalidateAsync, 2, false, ""},
		{written, OptionD, Shared, 2, false, ""},
		{written, OptionB, "", 2, false, ""},
		{written, OptionC, "", 2, false, ""},
		{readOnly, OptionA, "", 2, false, ""},
	} {
		err := Settings{CommitOption: tt.option, Persistence: CMP, Coherence: tt.coherence, Concurrency: tt.concurrency, Servers: tt.servers}.safe(tt.t)
		if (err != nil) != tt.refused {
			t.Errorf("%s %c coherence %q on %d servers: %v, want refused %v", tt.t.Name, tt.option, tt.coherence, tt.servers, err, tt.refused)
		}
		if err != nil && !strings.Contains(err.Error(), "--coherence invalidate") {
			t.Errorf("the refusal does not name the alternatives: %v", err)
		}
	}
	s, err := ParseSetting("Item.coherence=invalidate-async")
	if err != nil {
		t.Fatal(err)
	}
	var to Settings
	s.apply(&to)
	if to.Coherence != InvalidateAsync {
		t.Errorf("--entity Item.coherence=invalidate-async set %q", to.Coherence)
	}
	if _, err := ParseSetting("Item.coherence=eventual"); err == nil || !strings.Contains(err.Error(), Coherences) {
		t.Errorf("a bad mode: %v, want the allowed ones named", err)
	}
}

// Coherence shared leaves the arbitration of writers to the database:
// an updated type gets optimistic concurrency when it has a version
// column and the database's otherwise, exclusive (one process's lock) is
// refused naming the alternative, and A or D with database concurrency is
// accepted, the shared cache keeping the data across transactions.
func TestSharedCoherenceConcurrency(t *testing.T) {
	versioned := &Type{Name: "Account", Updated: true, Version: "version"}
	plain := &Type{Name: "Users", Updated: true}
	readOnly := &Type{Name: "Stock"}
	for _, tt := range []struct {
		t           *Type
		option      CommitOption
		concurrency Concurrency
		want        Concurrency // "" refused
	}{
		{versioned, OptionA, "", Optimistic},
		{plain, OptionA, "", Database},
		{readOnly, OptionA, "", Exclusive},
		{versioned, OptionA, Exclusive, ""},
		{readOnly, OptionA, Exclusive, Exclusive},
		{plain, OptionA, Database, Database},
		{versioned, OptionD, Database, Database},
		{versioned, OptionC, "", Optimistic},
	} {
		run := Settings{CommitOption: tt.option, Persistence: CMP, Concurrency: tt.concurrency, Coherence: Shared}
		s, err := Resolve(run, tt.t, nil)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("%s %c %q shared: accepted as %s, want refused", tt.t.Name, tt.option, tt.concurrency, s.Concurrency)
		case tt.want == "" && !strings.Contains(err.Error(), "--concurrency optimistic"):
			t.Errorf("the refusal does not name the alternative: %v", err)
		case tt.want != "" && err != nil:
			t.Errorf("%s %c %q shared: %v, want %s", tt.t.Name, tt.option, tt.concurrency, err, tt.want)
		case tt.want != "" && s.Concurrency != tt.want:
			t.Errorf("%s %c %q shared: concurrency %s, want %s", tt.t.Name, tt.option, tt.concurrency, s.Concurrency, tt.want)
		}
	}
}
