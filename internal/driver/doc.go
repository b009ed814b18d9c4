// Package driver generates load: terminals as goroutines, each dealing its
// plan from a mix with its own random stream, pacing, server-thread
// admission, retries and the phases of a run; it times every operation from
// outside and hands the samples to a metrics.Recorder.
//
// The plan (mix dealing, phase windows) is plain data, testable without
// goroutines. driver depends on workload, store (error classes) and metrics.
package driver
