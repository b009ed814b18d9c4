package storetest_test

import (
	"os"
	"testing"

	"github.com/tierbench/tierbench/internal/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Main(m, nil)) }
