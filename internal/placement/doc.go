// Package placement decides where a run's database server and the
// tierbench process run, and puts them there: it starts a private
// PostgreSQL server for the run pinned to one set of CPUs and pins this
// process to another (or the same) set.
//
// The seed's TPC-App study (Asskildt 2007) compared "mixed mode", the
// application server and PostgreSQL on one machine, with "dual mode",
// each on a machine of its own. On one host the two machines are halves
// of its CPUs: mixed puts tierbench and the database on the first half
// (one machine), dual puts tierbench on the first half and the database
// on the second (two machines of the same size), so the two modes differ
// only in whether the tiers share a machine.
//
// placement must not depend on any other tierbench package: it speaks to
// the server through PostgreSQL's own client programs, and gives the
// run a connection URL for the store to parse.
package placement
