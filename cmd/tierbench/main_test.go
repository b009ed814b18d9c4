package main

import (
	"os"
	"testing"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// The parallel tests run tierbench as child processes and wait for them
// (runs of fixed length, loads into the databases), so more than two run at
// once.
func TestMain(m *testing.M) { os.Exit(testsvc.MainWaiting(m)) }
