// Package store is tierbench's seam to relational databases.
//
// It parses DSNs, owns the connection pool of a run, prepares the statements
// a workload declares, counts every statement, transaction and rollback, and
// translates each database driver's errors into the project's own classes
// (deadlock, serialization failure, lock timeout, a multi-master cluster's
// certification failure, unique violation, not found, connection lost, a
// cluster node lost before COMMIT, and a commit in doubt: the connection
// lost after COMMIT was sent, or after a statement outside a transaction
// was, so that the transaction may or may not have committed).
// Backends live in sub-packages (store/sqlite,
// store/postgres, store/mysql) and are handed to Open through a Backends
// registry built in main, so nothing above this package imports a database
// driver.
//
// store must not depend on any other tierbench package.
package store
