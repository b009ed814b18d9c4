//go:build !unix

package sqlite

import (
	"errors"
	"os"
)

var errWouldBlock = errors.New("locked")

// flock is not implemented here: the lock is taken on Unix only.
func flock(*os.File, bool) error { return nil }

func alive(int) bool { return true }
