package appservers

import (
	"reflect"

	"github.com/tierbench/tierbench/internal/container"
	"github.com/tierbench/tierbench/internal/store"
	"github.com/tierbench/tierbench/internal/workload"
)

// EntitiesPath is where a served tier answers its counters (a Reading,
// as JSON) for the run that drives it; the remote layer answers the same
// over its own protocol (remote.RegisterCounters).
const EntitiesPath = "/_tierbench/entities"

// Reading is what a served tier answers: its container's counters by
// type, and what its statements cost its database (store.DB.Stats).
type Reading struct {
	Entities []Counters  `json:"entities"`
	Database store.Stats `json:"database"`
}

// Counters are one entity type's counters as a served tier sends them: a
// workload.EntityStats whose sizes (json:"-" in container.Stats, being
// the result's settings) travel too.
type Counters struct {
	Name      string             `json:"name"`
	Settings  container.Settings `json:"settings"`
	Stats     container.Stats    `json:"stats"`
	CacheSize int                `json:"cache_size"`
	PoolSize  int                `json:"pool_size"`
}

// Encode is what a tier sends: es and db.
func Encode(es []workload.EntityStats, db store.Stats) Reading {
	out := Reading{Entities: make([]Counters, 0, len(es)), Database: db}
	for _, e := range es {
		out.Entities = append(out.Entities, Counters{Name: e.Name, Settings: e.Settings, Stats: e.Stats, CacheSize: e.Stats.CacheSize, PoolSize: e.Stats.PoolSize})
	}
	return out
}

// Decode is the container's counters Encode sent.
func (r Reading) Decode() []workload.EntityStats {
	out := make([]workload.EntityStats, 0, len(r.Entities))
	for _, c := range r.Entities {
		st := c.Stats
		st.CacheSize, st.PoolSize = c.CacheSize, c.PoolSize
		out = append(out, workload.EntityStats{Name: c.Name, Settings: c.Settings, Stats: st})
	}
	return out
}

// SumDatabase is the servers' database counters summed, each field, the
// cluster nodes each lost, in the servers' order, and their read
// replicas' counters (store.ReplicaSummary.Plus).
func SumDatabase(all ...store.Stats) store.Stats {
	var out store.Stats
	vo := reflect.ValueOf(&out).Elem()
	for _, s := range all {
		v := reflect.ValueOf(s)
		for i := range vo.NumField() {
			if vo.Field(i).CanInt() {
				vo.Field(i).SetInt(vo.Field(i).Int() + v.Field(i).Int())
			}
		}
		out.NodesLost = append(out.NodesLost, s.NodesLost...)
		out.Replicas = out.Replicas.Plus(s.Replicas)
	}
	return out
}

// How each field of container.Stats combines. A field not named here is
// a counter: what happened since a start is end minus start, and a
// cluster's is the sum of its servers'. New counters (coherence's) are
// counters by default, so they merge exactly without a change here.
var (
	// levels are states at a moment, not events: since a start they are
	// the end's; across servers they add up (the instances ready in the
	// cluster at the end; a peak sums to a bound of the cluster's peak).
	levels = map[string]bool{"PeakReady": true, "PeakPooled": true, "ReadyAtEnd": true, "PooledAtEnd": true}
	// sizes are the same setting in every server (a percentage resolved
	// against the same rows): kept, not summed.
	sizes = map[string]bool{"Rows": true, "CacheSize": true, "PoolSize": true}
	// latencies are percentiles of a server's invalidations since its
	// warm-up: since a start they are the end's; across servers the
	// largest, a bound of the cluster's (percentiles do not add, and the
	// histograms stay in the servers).
	latencies = map[string]bool{"InvalidationP50Micros": true, "InvalidationP99Micros": true, "InvalidationMaxMicros": true}
)

// combine sets each field of into from a and b: op on counters, the
// level rule on levels, the larger of the sizes.
func combine(a, b container.Stats, op func(x, y int64) int64, level func(x, y int64) int64, latency func(x, y int64) int64) container.Stats {
	var out container.Stats
	va, vb, vo := reflect.ValueOf(a), reflect.ValueOf(b), reflect.ValueOf(&out).Elem()
	for i := range vo.NumField() {
		name := vo.Type().Field(i).Name
		if !vo.Field(i).CanInt() {
			// Not a count (none today): a's, the end's or the first
			// server's, rather than a sum that means nothing.
			vo.Field(i).Set(va.Field(i))
			continue
		}
		x, y := va.Field(i).Int(), vb.Field(i).Int()
		switch {
		case sizes[name]:
			vo.Field(i).SetInt(max(x, y))
		case levels[name]:
			vo.Field(i).SetInt(level(x, y))
		case latencies[name]:
			vo.Field(i).SetInt(latency(x, y))
		default:
			vo.Field(i).SetInt(op(x, y))
		}
	}
	return out
}

// Since are the counters of what happened between start and end, two
// readings of one server: counters differenced, levels and sizes as at
// the end. A type missing from start started at zero.
func Since(end, start []workload.EntityStats) []workload.EntityStats {
	out := make([]workload.EntityStats, 0, len(end))
	for _, e := range end {
		var s container.Stats
		for _, b := range start {
			if b.Name == e.Name {
				s = b.Stats
			}
		}
		end := func(x, _ int64) int64 { return x }
		e.Stats = combine(e.Stats, s, func(x, y int64) int64 { return x - y }, end, end)
		out = append(out, e)
	}
	return out
}

// Merge is the cluster's counters: per type, every counter summed over
// the servers, exactly (levels summed too, sizes kept), in the order the
// types first appear.
func Merge(servers ...[]workload.EntityStats) []workload.EntityStats {
	var out []workload.EntityStats
	at := map[string]int{}
	sum := func(x, y int64) int64 { return x + y }
	for _, es := range servers {
		for _, e := range es {
			i, ok := at[e.Name]
			if !ok {
				at[e.Name] = len(out)
				out = append(out, e)
				continue
			}
			out[i].Stats = combine(out[i].Stats, e.Stats, sum, sum, func(x, y int64) int64 { return max(x, y) })
		}
	}
	return out
}
