// Package sharedcache is the shared cache of coherence shared: the entity
// state that every app server of a run reads before the database, kept
// in Redis through rueidis, with a near cache in each server that Redis
// keeps current by server-assisted client-side caching (RESP3 tracking:
// Redis pushes an invalidation to each server that read a key when the
// key changes).
//
// Each identity is one Redis hash under the run's prefix, holding its
// state (v, the field values and the version, encoded compactly) and its
// epoch (e, how many commits have invalidated it). A load that misses
// reads the database and fills the hash only if the epoch has not moved
// since (a commit may have replaced what the database returned); a commit
// moves the epoch and drops the state. The container decides when (see
// container.SharedCache); this package only does it, one round trip at a
// time, and counts the round trips.
//
// sharedcache depends on container and the Redis client only.
package sharedcache
