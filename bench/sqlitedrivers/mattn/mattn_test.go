//go:build cgo

// Package mattn benchmarks github.com/mattn/go-sqlite3 (cgo). It lives in its
// own package because mattn and ncruces both register the database/sql name
// "sqlite3". Without cgo (or a C compiler) this package has no tests.
package mattn_test

import (
	"fmt"
	"os"
	"testing"

	sd "github.com/tierbench/tierbench/bench/sqlitedrivers"

	_ "github.com/mattn/go-sqlite3" // registers "sqlite3"
)

func mattnDSN(path string, busyMS int, txlock string) string {
	dsn := fmt.Sprintf("file:%s?_busy_timeout=%d&_journal_mode=WAL&_synchronous=NORMAL", path, busyMS)
	if txlock != "" {
		dsn += "&_txlock=" + txlock
	}
	return dsn
}

var drivers = []sd.Driver{
	{Name: "mattn", SQLName: "sqlite3", Module: "github.com/mattn/go-sqlite3", DSN: mattnDSN},
}

func TestMain(m *testing.M) {
	code := m.Run()
	sd.Cleanup()
	os.Exit(code)
}

func TestConfig(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.Name, func(t *testing.T) { sd.CheckConfig(t, d) })
	}
}

func TestTxLock(t *testing.T) {
	for _, d := range drivers {
		t.Run(d.Name, func(t *testing.T) { sd.CheckTxLock(t, d) })
	}
}

func run(b *testing.B, fn func(*testing.B, sd.Driver)) {
	for _, d := range drivers {
		b.Run(d.Name, func(b *testing.B) { fn(b, d) })
	}
}

func BenchmarkPointSelect(b *testing.B)         { run(b, sd.PointSelect) }
func BenchmarkPointSelectParallel(b *testing.B) { run(b, sd.PointSelectParallel) }
func BenchmarkHoldingsRead(b *testing.B)        { run(b, sd.HoldingsRead) }
func BenchmarkBuyStock(b *testing.B)            { run(b, sd.BuyStock) }
func BenchmarkBuyStockParallel(b *testing.B)    { run(b, sd.BuyStockParallel) }
func BenchmarkBulkLoad(b *testing.B)            { run(b, sd.BulkLoad) }
