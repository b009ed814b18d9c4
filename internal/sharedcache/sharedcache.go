package sharedcache

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/tierbench/tierbench/internal/container"
)

// Cache is a run's shared cache in Redis, one per process: every
// container of the process reads and writes through it.
type Cache struct {
	client rueidis.Client
	// prefix starts every key of the run: "tierbench:RUN:".
	prefix string
	url    string
	near   bool
	clear  bool
	// roundTrips counts the requests that reached Redis (a near-cache
	// hit is none).
	roundTrips atomic.Int64
	// bufs recycles encoding buffers.
	bufs sync.Pool
}

var _ container.SharedCache = (*Cache)(nil)

// Options of Open.
type Options struct {
	// Run names the run: keys are "tierbench:RUN:TYPE:KEY", so that two
	// runs on one Redis never mix. Every app server of a run gives the
	// same name.
	Run string
	// ClearAtClose: Close removes the run's keys (the process that named
	// the run is the last of its servers to stop).
	ClearAtClose bool
	// NoNearCache reads every state from Redis: no client-side caching,
	// and no Sync round trip (the benchmark's and the tests' baseline).
	NoNearCache bool
}

const (
	// keyTTL bounds how long a run's keys outlive it if it dies before
	// Close removes them; each write and fill moves it on.
	keyTTL = 24 * time.Hour
	// nearTTL bounds how long the near cache keeps a state that nothing
	// invalidates (Redis's invalidations keep it current meanwhile).
	nearTTL = time.Hour
	// nearBytes is the near cache's size in each server.
	nearBytes = 64 << 20
)

// Open connects to the Redis at rawURL (redis://HOST:PORT[/DB]). An
// unreachable server is an error naming the URL, its password left out.
func Open(ctx context.Context, rawURL string, o Options) (*Cache, error) {
	if o.Run == "" {
		return nil, errors.New("sharedcache: no run name")
	}
	shown := redact(rawURL)
	opt, err := rueidis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("shared cache %s: %w", shown, err)
	}
	// One connection: the near cache's invalidations arrive on the
	// connection its reads went out on, and Sync's round trip must travel
	// the same one to bring them all (rueidis would otherwise spread
	// requests over several).
	opt.PipelineMultiplex = -1
	opt.CacheSizeEachConn = nearBytes
	opt.DisableCache = o.NoNearCache
	opt.Dialer.Timeout = 5 * time.Second
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("shared cache %s unreachable: %w", shown, err)
	}
	c := &Cache{client: client, prefix: "tierbench:" + o.Run + ":", url: shown, near: !o.NoNearCache, clear: o.ClearAtClose}
	if err := c.Sync(ctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("shared cache %s unreachable: %w", shown, err)
	}
	return c, nil
}

// URL of the server, without its password.
func (c *Cache) URL() string { return c.url }

// RoundTrips is how many requests have reached Redis.
func (c *Cache) RoundTrips() int64 { return c.roundTrips.Load() }

// key is the Redis key of t's identity k: its key columns in declaration
// order (integers never hold the separator, and a type has at most one
// string column, so no two identities share a key).
func (c *Cache) key(t *container.Type, k container.Key) string {
	b := make([]byte, 0, len(c.prefix)+len(t.Name)+24+len(k.S))
	b = append(b, c.prefix...)
	b = append(b, t.Name...)
	ints := 0
	for _, col := range t.Key {
		b = append(b, ':')
		if col.Kind == container.String {
			b = append(b, k.S...)
			continue
		}
		if ints == 0 {
			b = strconv.AppendInt(b, k.A, 10)
		} else {
			b = strconv.AppendInt(b, k.B, 10)
		}
		ints++
	}
	return string(b)
}

// Read reads t's identity key: the near cache's copy if it holds one,
// else Redis's.
func (c *Cache) Read(ctx context.Context, t *container.Type, key container.Key, vals []container.Value, version *int64) (container.SharedRead, error) {
	cmd := c.client.B().Hmget().Key(c.key(t, key)).Field("v", "e").Cache()
	res := c.client.DoCache(ctx, cmd, nearTTL)
	near := res.IsCacheHit()
	if !near {
		c.roundTrips.Add(1)
	}
	fields, err := res.ToArray()
	if err != nil {
		return container.SharedRead{}, err
	}
	if len(fields) != 2 {
		return container.SharedRead{}, fmt.Errorf("sharedcache: HMGET answered %d values for 2 fields", len(fields))
	}
	r := container.SharedRead{Near: near}
	if !fields[1].IsNil() {
		if r.Epoch, err = fields[1].AsInt64(); err != nil {
			return container.SharedRead{}, fmt.Errorf("sharedcache: epoch of %s %v: %w", t.Name, key, err)
		}
	}
	if fields[0].IsNil() {
		return r, nil
	}
	state, err := fields[0].ToString()
	if err != nil {
		return container.SharedRead{}, err
	}
	if err := decodeState([]byte(state), t, vals, version); err != nil {
		return container.SharedRead{}, err
	}
	r.Hit = true
	return r, nil
}

// Sync makes a round trip on the connection the near cache's reads and
// invalidations travel: Redis sends an invalidation on it when the write
// executes, so any sent before the PING is answered has been applied to
// the near cache when Sync returns. Without a near cache it does nothing.
func (c *Cache) Sync(ctx context.Context) error {
	if !c.near {
		return nil
	}
	c.roundTrips.Add(1)
	return c.client.Do(ctx, c.client.B().Ping().Build()).Error()
}

// fill stores a state unless the epoch has moved since the read that
// missed, and raises the key's version floor (n) to the state's, so that
// a write-through of an older version arriving late drops it rather than
// replacing it; the key's TTL moves on.
var fill = rueidis.NewLuaScript(`
if (tonumber(redis.call('HGET', KEYS[1], 'e')) or 0) ~= tonumber(ARGV[1]) then
	return 0
end
redis.call('HSET', KEYS[1], 'v', ARGV[2])
local floor, version = tonumber(redis.call('HGET', KEYS[1], 'n')), tonumber(ARGV[4])
if floor == nil or floor < version then
	redis.call('HSET', KEYS[1], 'n', version)
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

// invalidate moves each key's epoch on and, for a write at a version
// (ARGV: per key a version, 0 for none, and a state, empty for none),
// replaces the state if no later version has been written, filled or
// removed (field n, the highest seen); otherwise, or without a version,
// it drops the state (which one is the latest, the script cannot tell; the
// next reader loads it). A remove at a version raises n to it. All at
// once (a script runs alone), so a reader sees the old state with the old
// epoch or the new one with the new.
var invalidate = rueidis.NewLuaScript(`
for i, k in ipairs(KEYS) do
	local version, state = tonumber(ARGV[2*i]), ARGV[2*i+1]
	local floor = tonumber(redis.call('HGET', k, 'n'))
	redis.call('HINCRBY', k, 'e', 1)
	if version > 0 and state ~= '' and (floor == nil or floor < version) then
		redis.call('HSET', k, 'v', state, 'n', version)
	else
		redis.call('HDEL', k, 'v')
		if version > 0 and (floor == nil or floor < version) then
			redis.call('HSET', k, 'n', version)
		end
	end
	redis.call('PEXPIRE', k, ARGV[1])
end
return #KEYS`)

var ttlArg = strconv.FormatInt(keyTTL.Milliseconds(), 10)

// Fill stores the state of t's identity key as read from the database,
// unless a commit has invalidated it since the read that returned epoch.
func (c *Cache) Fill(ctx context.Context, t *container.Type, key container.Key, epoch int64, vals []container.Value, version int64) (bool, error) {
	buf, _ := c.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	*buf = appendState((*buf)[:0], t, vals, version)
	c.roundTrips.Add(1)
	n, err := fill.Exec(ctx, c.client, []string{c.key(t, key)}, []string{strconv.FormatInt(epoch, 10), string(*buf), ttlArg, strconv.FormatInt(version, 10)}).AsInt64()
	c.bufs.Put(buf)
	return n == 1, err
}

// Invalidate drops the identities' states, or writes the written ones
// through, and moves their epochs on, in one round trip.
func (c *Cache) Invalidate(ctx context.Context, ids []container.SharedID) error {
	keys := make([]string, len(ids))
	args := make([]string, 1, 1+2*len(ids))
	args[0] = ttlArg
	var buf []byte
	for n, id := range ids {
		keys[n] = c.key(id.Type, id.Key)
		state := ""
		if id.Written != nil {
			buf = appendState(buf[:0], id.Type, id.Written, id.Version)
			state = string(buf)
		}
		args = append(args, strconv.FormatInt(id.Version, 10), state)
	}
	c.roundTrips.Add(1)
	return invalidate.Exec(ctx, c.client, keys, args).Error()
}

// Close disconnects, after removing the run's keys under ClearAtClose;
// otherwise they stay until Clear (or their TTL). A failure to remove
// them is not reported: they expire.
func (c *Cache) Close() {
	if c.clear {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c.Clear(ctx)
		cancel()
	}
	c.client.Close()
}

// Clear removes every key of the run, at its end.
func (c *Cache) Clear(ctx context.Context) error {
	cursor := uint64(0)
	for {
		entry, err := c.client.Do(ctx, c.client.B().Scan().Cursor(cursor).Match(c.prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			return fmt.Errorf("shared cache %s: clearing the run's keys: %w", c.url, err)
		}
		if len(entry.Elements) > 0 {
			if err := c.client.Do(ctx, c.client.B().Unlink().Key(entry.Elements...).Build()).Error(); err != nil {
				return fmt.Errorf("shared cache %s: clearing the run's keys: %w", c.url, err)
			}
		}
		if cursor = entry.Cursor; cursor == 0 {
			return nil
		}
	}
}

// redact is rawURL without its password.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	return u.Redacted()
}
