package rubis

import (
	"context"
	"testing"
	"time"

	"github.com/tierbench/tierbench/internal/container"
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
	db := storetest.Open(b, storetest.SQLite(b), store.Options{Threads: 1})
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
	beans, err := openContainer(ctx, db, settings, nil, true)
	if err != nil {
		b.Fatal(err)
	}
	beans.now = func() time.Time { return base }
	pop := mustPopulation(b, 1)
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
