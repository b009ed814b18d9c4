// Package container is tierbench's entity container: a data mapper that
// runs a workload's entity types the way an EJB 2 container runs entity
// beans, with the caching, persistence and concurrency choices as switches
// and every lifecycle transition counted.
//
// An entity type is declared once (Type: table, key, fields, finders,
// settings). Each type has a home holding its ready cache (instances with
// identity; LRU beyond the cache size) and its pool (instances without
// identity; discarded beyond the pool size). Business operations run in
// container-managed transactions (Tx) on a server thread's database
// session: finds enlist instances, commit stores them per the persistence
// strategy, then applies the commit option (A keeps data, B keeps identity,
// C passivates, D is A with a refresh interval).
//
// container depends on store only.
package container
