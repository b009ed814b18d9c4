// Package config is the configuration of a run: its fields and defaults,
// strict YAML (unknown keys are errors), overlay of command-line flags, and
// validation whose messages name the field, the value and what is allowed.
//
// Keys are the same everywhere: a flag --server-threads, a YAML key
// server-threads, and the key server-threads in a result's config block, so a
// result's config can be pasted into a file and run again.
//
// config depends on store, container, remote and placement (for parsing
// and checking their values) only.
package config
