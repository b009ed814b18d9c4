package coherence

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/tierbench/tierbench/internal/container"
)

// The messages' encoding: compact and binary, as every writing commit
// sends an announcement and a settle and waits for a reply, and JSON's
// reflection cost more than the rest of a message's handling (see
// BenchmarkCodec). Integers are varints, strings a length and their
// bytes, lists a count and their elements; the first byte is the
// format's version, so that a message of another format is refused, not
// misread. Version 2 added a settle's created identities
// (container.Written.Created), claims and the heartbeat's list of them
// (decision 0044).
const codecVersion = 2

var errShort = errors.New("coherence: message cut short")

func appendString(buf []byte, s string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
}

func appendBool(buf []byte, v bool) []byte {
	if v {
		return append(buf, 1)
	}
	return append(buf, 0)
}

// appendMessage appends m's encoding to buf.
func appendMessage(buf []byte, m *message) []byte {
	buf = append(buf, codecVersion, m.Kind)
	buf = appendString(buf, m.From)
	buf = binary.AppendUvarint(buf, m.Seq)
	buf = binary.AppendVarint(buf, m.Sent)
	switch m.Kind {
	case kindAnnounce, kindSettle:
		buf = binary.AppendUvarint(buf, uint64(len(m.Writes)))
		for _, w := range m.Writes {
			buf = appendWrites(buf, w)
		}
	case kindHeartbeat:
		buf = binary.AppendUvarint(buf, uint64(len(m.Members)))
		for _, s := range m.Members {
			buf = appendString(buf, s)
		}
		buf = binary.AppendUvarint(buf, uint64(len(m.Applied)))
		for name, seq := range m.Applied {
			buf = binary.AppendUvarint(appendString(buf, name), seq)
		}
		buf = binary.AppendUvarint(buf, uint64(len(m.Claims)))
		for _, s := range m.Claims {
			buf = appendString(buf, s)
		}
	case kindFence:
		buf = appendString(buf, m.Fenced)
	case kindClaim:
		buf = appendString(buf, m.Claim)
	}
	return buf
}

func appendWrites(buf []byte, w *container.Writes) []byte {
	buf = binary.AppendUvarint(buf, w.Announced)
	buf = binary.AppendUvarint(buf, uint64(len(w.Items)))
	for n := range w.Items {
		it := &w.Items[n]
		buf = appendBool(appendString(buf, it.Type), it.Sync)
		buf = appendKeys(buf, it.Keys)
		buf = binary.AppendUvarint(buf, uint64(len(it.Finders)))
		for _, f := range it.Finders {
			buf = appendBool(appendString(appendString(buf, f.Finder), f.Args), f.All)
		}
		buf = appendKeys(buf, it.Created)
	}
	return buf
}

func appendKeys(buf []byte, keys []container.Key) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(keys)))
	for _, k := range keys {
		buf = binary.AppendVarint(buf, k.A)
		buf = binary.AppendVarint(buf, k.B)
		buf = appendString(buf, k.S)
	}
	return buf
}

// decoder reads messages. It keeps one copy of each name it has read
// (types, finders, servers: a few dozen in a run), so that decoding them
// allocates nothing after the first time; one decoder serves one
// goroutine.
type decoder struct {
	names map[string]string
}

// maxNames bounds the names kept: past it, a name is allocated each time.
const maxNames = 1024

// reader walks one message; the first error sticks.
type reader struct {
	data []byte
	err  error
	d    *decoder
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errShort
	}
	r.data = nil
}

func (r *reader) byte() byte {
	if len(r.data) == 0 {
		r.fail()
		return 0
	}
	c := r.data[0]
	r.data = r.data[1:]
	return c
}

func (r *reader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }
func (r *reader) varint() int64   { return readVarint(r, binary.Varint) }

// readVarint reads a varint with read (binary.Uvarint or Varint).
func readVarint[T uint64 | int64](r *reader, read func([]byte) (T, int)) T {
	v, n := read(r.data)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.data = r.data[n:]
	return v
}

// count reads a list's length: each element takes a byte at least, so a
// count past what is left is a corrupt message, not a reason to
// allocate.
func (r *reader) count() int {
	n := r.uvarint()
	if n > uint64(len(r.data)) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *reader) bytes() []byte {
	n := r.count()
	if r.err != nil {
		return nil
	}
	b := r.data[:n:n]
	r.data = r.data[n:]
	return b
}

// string reads a string of data (keys, arguments), allocated.
func (r *reader) string() string { return string(r.bytes()) }

// name reads a string of the few a run has, kept in the decoder.
func (r *reader) name() string {
	b := r.bytes()
	if r.d == nil {
		return string(b)
	}
	if s, ok := r.d.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(r.d.names) < maxNames {
		if r.d.names == nil {
			r.d.names = map[string]string{}
		}
		r.d.names[s] = s
	}
	return s
}

func (r *reader) bool() bool { return r.byte() != 0 }

// decode reads a message into m.
func (d *decoder) decode(data []byte, m *message) error {
	r := reader{data: data, d: d}
	if v := r.byte(); r.err == nil && v != codecVersion {
		return fmt.Errorf("coherence: message of format %d, not %d", v, codecVersion)
	}
	m.Kind = r.byte()
	m.From = r.name()
	m.Seq = r.uvarint()
	m.Sent = r.varint()
	switch m.Kind {
	case kindAnnounce, kindSettle:
		m.Writes = make([]*container.Writes, r.count())
		for n := range m.Writes {
			m.Writes[n] = r.writes(m.Kind)
		}
	case kindHeartbeat:
		if n := r.count(); n > 0 {
			m.Members = make([]string, n)
			for i := range m.Members {
				m.Members[i] = r.name()
			}
		}
		n := r.count()
		m.Applied = make(map[string]uint64, n)
		for range n {
			name := r.name()
			m.Applied[name] = r.uvarint()
		}
		if n := r.count(); n > 0 {
			m.Claims = make([]string, n)
			for i := range m.Claims {
				m.Claims[i] = r.name()
			}
		}
	case kindFence:
		m.Fenced = r.name()
	case kindClaim:
		m.Claim = r.name()
	default:
		if r.err == nil {
			return fmt.Errorf("coherence: message of unknown kind %q", m.Kind)
		}
	}
	if r.err == nil && len(r.data) > 0 {
		return fmt.Errorf("coherence: %d bytes past the message's end", len(r.data))
	}
	return r.err
}

func (r *reader) writes(kind byte) *container.Writes {
	w := &container.Writes{Phase: container.Settle, Announced: r.uvarint()}
	if kind == kindAnnounce {
		w.Phase = container.Announce
	}
	w.Items = make([]container.Written, r.count())
	for n := range w.Items {
		it := &w.Items[n]
		it.Type = r.name()
		it.Sync = r.bool()
		it.Keys = r.keys()
		if f := r.count(); f > 0 {
			it.Finders = make([]container.FinderEntry, f)
			for i := range it.Finders {
				it.Finders[i] = container.FinderEntry{Finder: r.name(), Args: r.string(), All: r.bool()}
			}
		}
		it.Created = r.keys()
	}
	return w
}

// keys reads a list of keys; nil when it is empty.
func (r *reader) keys() []container.Key {
	k := r.count()
	if k == 0 {
		return nil
	}
	keys := make([]container.Key, k)
	for i := range keys {
		keys[i] = container.Key{A: r.varint(), B: r.varint(), S: r.string()}
	}
	return keys
}

// appendReply appends the reply of server from to message seq.
func appendReply(buf []byte, from string, seq uint64) []byte {
	return appendString(binary.AppendUvarint(append(buf, codecVersion), seq), from)
}

// appendClaimAnswer appends the answer of server from to claim message
// seq: a reply, and whether from ever left the claimed type out.
func appendClaimAnswer(buf []byte, from string, seq uint64, skipped bool) []byte {
	return appendBool(appendReply(buf, from, seq), skipped)
}

// decodeReply reads a reply: the number replied to and the replier's
// name, a slice of data (so that looking it up allocates nothing), and,
// a claim's answer, whether the replier left the type out.
func decodeReply(data []byte) (seq uint64, from []byte, skipped bool, err error) {
	r := reader{data: data}
	if v := r.byte(); r.err == nil && v != codecVersion {
		return 0, nil, false, fmt.Errorf("coherence: reply of format %d, not %d", v, codecVersion)
	}
	seq = r.uvarint()
	from = r.bytes()
	if r.err == nil && len(r.data) == 1 {
		skipped = r.bool()
	}
	if r.err == nil && len(r.data) > 0 {
		return 0, nil, false, fmt.Errorf("coherence: %d bytes past the reply's end", len(r.data))
	}
	return seq, from, skipped, r.err
}
