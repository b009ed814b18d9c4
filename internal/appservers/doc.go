// Package appservers is what a run over several app servers (N middle-tier
// processes, each with its own container, over one database) needs beyond
// starting them: the container counters each server answers and their
// exact merge, and the spread of the terminals over the servers.
//
// It sees the workload API only (workload, container); the runner starts
// the processes (tierproc) and calls it. It must not depend on the runner,
// the driver or a workload's package.
package appservers
