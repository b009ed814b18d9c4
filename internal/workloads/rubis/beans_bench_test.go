package rubis

import (
	"context"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/remote"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// BenchmarkBeans runs the facade's ViewItem and SearchItemsByCategory in
// process on SQLite with every instance cached (commit option A, warmed),
// so that the beans' own code, entity access included, is as large a
// share of an interaction as it can be.
//
//	go test -run '^$' -bench Beans -benchmem ./internal/workloads/rubis/
func BenchmarkBeans(b *testing.B) {
	ctx := context.Background()
	beans, pop := benchContainer(b)
	first := pop.FirstActiveItem()
	b.Run("ViewItem", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := beans.ViewItem(ctx, 0, ViewItemRequest{ItemID: first + int64(i)%pop.ActiveItems}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("SearchItemsByCategory", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := beans.SearchItemsByCategory(ctx, 0, SearchItemsByCategoryRequest{Category: int64(1 + i%numCategories), NbOfItems: 20}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchContainer is the facade over a warmed container (commit option A,
// every instance cached) on SQLite at scale 1, its clock stopped.
func benchContainer(b *testing.B) (*Facade, population) {
	ctx := context.Background()
	db := storetest.Open(b, storetest.SQLite(b), store.Options{Threads: 2})
	base := timeBase(time.Now())
	if _, err := loadAt(ctx, db, workload.LoadParams{Scale: 1, Seed: testSeed}, base); err != nil {
		b.Fatal(err)
	}
	run := runSettings(container.CMP, container.OptionA, container.Exclusive, "100%")
	settings := make(map[string]container.Settings)
	for _, ty := range entityTypes {
		s, err := container.Resolve(run, ty, nil)
		if err != nil {
			b.Fatal(err)
		}
		settings[ty.Name] = s
	}
	beans, err := openContainer(ctx, db, workload.RunParams{Entities: settings}, true)
	if err != nil {
		b.Fatal(err)
	}
	beans.now = func() time.Time { return base }
	return beans, mustPopulation(b, 1)
}

// BenchmarkFacadeEntities: ViewItem through the business tier, its facade
// over local entity beans (facade) and over entity beans it calls through
// the protocol (facade-remote), on each protocol, side by side. The
// facade's entity calls per interaction are reported.
//
//	go test -run '^$' -bench FacadeEntities -benchmem -count 3 ./internal/workloads/rubis/
func BenchmarkFacadeEntities(b *testing.B) {
	ctx := context.Background()
	beans, pop := benchContainer(b)
	first := pop.FirstActiveItem()
	for _, p := range remote.Protocols {
		for _, style := range []string{"facade", FacadeRemote} {
			b.Run(style+"/"+string(p), func(b *testing.B) {
				var entityCalls, calls remote.Meter
				a := serveStyleRemote(b, style, p, beans, 1, container.Generated, &entityCalls)
				ctx := remote.WithMeter(ctx, &calls)
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if _, err := a.ViewItem(ctx, 0, ViewItemRequest{ItemID: first + int64(i)%pop.ActiveItems}); err != nil {
						b.Fatal(err)
					}
				}
				n := float64(b.N)
				b.ReportMetric(float64(calls.Counts().Calls)/n, "calls/op")
				b.ReportMetric(float64(entityCalls.Counts().Calls)/n, "entity-calls/op")
				b.ReportMetric(float64(entityCalls.Counts().Layer().Microseconds())/n, "entity-layer-µs/op")
			})
		}
	}
}
