// Package workload is the contract between benchmark applications and the
// rest of tierbench: what a workload declares (operations, mix, metric,
// defaults), how it loads its database, and how the driver calls it.
//
// A workload sees only this package, the container and the store; it never
// imports the driver or the CLI. workload depends on config, container and
// store only.
package workload
