package sweep_test

import (
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/sweep"
)

// The capacity model's check (docs/model.md) parses and every point is a
// valid run: 2 persistence paths × 7 client counts on PostgreSQL.
func TestShippedModelCheckSweepIsValid(t *testing.T) {
	r := newRunner(t)
	base, _, _ := r.Config("stockonline")
	f, err := sweep.Parse("../../experiments/model-check.yaml")
	if err != nil {
		t.Fatal(err)
	}
	points, err := f.Points(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 14 {
		t.Errorf("%d points, want 2 persistence paths × 7 client counts", len(points))
	}
	for _, p := range points {
		c := p.Config
		if err := r.Validate(c); err != nil {
			t.Errorf("%s %s: %v", p.Experiment.Name, p.Label(), err)
		}
		if c.DB.Dialect != store.Postgres || time.Duration(c.Duration) != 15*time.Second || c.ServerThreads != 10 {
			t.Errorf("%s %s: %+v", p.Experiment.Name, p.Label(), c)
		}
	}
}

// The load-dependent model's sweep (docs/model.md) parses and every
// point is a valid run: SQLite and PostgreSQL × 6 client counts.
func TestShippedModelLoadSweepIsValid(t *testing.T) {
	r := newRunner(t)
	base, _, _ := r.Config("stockonline")
	f, err := sweep.Parse("../../experiments/model-load.yaml")
	if err != nil {
		t.Fatal(err)
	}
	points, err := f.Points(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 12 {
		t.Errorf("%d points, want 2 databases × 6 client counts", len(points))
	}
	dialects := map[store.Dialect]int{}
	for _, p := range points {
		c := p.Config
		if err := r.Validate(c); err != nil {
			t.Errorf("%s %s: %v", p.Experiment.Name, p.Label(), err)
		}
		dialects[c.DB.Dialect]++
		if time.Duration(c.Duration) != 20*time.Second || c.ServerThreads != 10 {
			t.Errorf("%s %s: %+v", p.Experiment.Name, p.Label(), c)
		}
	}
	if dialects[store.SQLite] != 6 || dialects[store.Postgres] != 6 {
		t.Errorf("points by database: %v, want 6 SQLite and 6 PostgreSQL", dialects)
	}
}
