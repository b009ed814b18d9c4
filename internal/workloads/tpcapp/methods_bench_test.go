package tpcapp

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/store/storetest"
	"github.com/tierbench/tierbench/internal/workload"
)

// BenchmarkMethods is each business method in process on PostgreSQL,
// partners answering at once (their configured delay, 500 ms by default,
// comes on top in a run), in SQL and on the container under CMP (option
// C, as Hibernate ran it), with 100 KiB images in the rows or in files:
// where a method's time goes apart from the partners and the front
// (BenchmarkFront). stmts/op are the database statements per call.
//
//	go test ./internal/workloads/tpcapp/ -run '^$' -bench BenchmarkMethods -benchtime 2s
func BenchmarkMethods(b *testing.B) {
	dsn := storetest.Postgres(b)
	ctx := context.Background()
	for _, images := range []string{ImagesInRow, ImagesFile} {
		db, _ := loadTest(b, dsn, 1, LoadOptions{Images: images, ImageBytes: 100 << 10, ImageDir: b.TempDir(), Indexes: IndexesTuned})
		direct, err := NewDirect(ctx, db)
		if err != nil {
			b.Fatal(err)
		}
		beans := testBeans(b, db, container.Settings{Persistence: container.CMP, CommitOption: container.OptionC})
		for _, data := range []struct {
			name string
			d    Data
		}{{"direct", direct}, {"cmp", beans}} {
			sessions, err := ParseSessionLength("negexp:20")
			if err != nil {
				b.Fatal(err)
			}
			// An EB sends the requests, as in a run.
			e := &ebs{methods: serviceOver(b, data.d, 1, 1), pop: populationAt(1), gen: gen{seed: 7}, sessions: sessions, runTag: data.name[:1]}
			for op := range numOps {
				b.Run(fmt.Sprintf("%s/%s/%s", images, data.name, opNames[op]), func(b *testing.B) {
					client := e.NewClient(0, op, rand.New(rand.NewPCG(1, uint64(op))))
					before := db.Stats()
					n := 0
					for b.Loop() {
						if err := client.Do(ctx, workload.Step{Op: op}); err != nil && !workload.IsBusiness(err) {
							b.Fatal(err)
						}
						n++
					}
					b.ReportMetric(float64(statementsSince(db, before))/float64(n), "stmts/op")
				})
			}
		}
	}
}

func statementsSince(db *store.DB, before store.Stats) int64 {
	return db.Stats().Statements - before.Statements
}
