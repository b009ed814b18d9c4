//go:build !race

package postgres_test

// raceEnabled: the race detector changes what allocates.
const raceEnabled = false
