package sqlite_test

import (
	"testing"

	"github.com/tierbench/tierbench/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Exercise(t, storetest.SQLite)
}
