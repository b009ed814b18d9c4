// Package model predicts how a closed system's throughput and response
// time change with its clients, from one measured run: a single-class
// closed queueing network (the workload's mix as one class) solved by
// mean value analysis.
//
// Stations are delays (infinite servers: think time, round trips),
// queues (one server) and multi-server stations (m identical servers:
// CPU cores). Exact MVA (Reiser and Lavenberg)
// solves the network, with the load-dependent recursion of marginal
// probabilities for multi-server stations; beyond ExactMaxClients clients,
// or for a station with more than ExactMaxServers servers, the
// approximate MVA of Schweitzer and Bard, with Seidmann's split of a
// multi-server station into a queue and a delay, does. A pool of server
// threads held for whole operations (Network.Admission) is a
// flow-equivalent server in front of the stations.
//
// FromResult builds the network from a result file's measured demands;
// Calibrate from two or more runs at different loads, each demand then
// a Law of the operations in the middle tier (the CPUs' falling, the
// latency's rising), solved as a load-dependent flow-equivalent server;
// Spread spreads a network over several app servers sharing the
// database.
// model depends on result and nothing else of tierbench's; it prints
// nothing.
package model
