package coherence

import (
	"reflect"
	"testing"

	"github.com/tierbench/tierbench/internal/container"
)

// stockOnlineAnnounce is what a Stock-Online BuyStock commit announces:
// its account and its holding, with the holding finder's entry.
func stockOnlineAnnounce() *message {
	return &message{Kind: kindAnnounce, From: "server-1-of-2", Seq: 123456, Sent: 1764668000123456789,
		Writes: []*container.Writes{{Phase: container.Announce, Announced: 98765, Items: []container.Written{
			{Type: "Account", Sync: true, Keys: []container.Key{{A: 4711}}},
			{Type: "Holding", Sync: true, Keys: []container.Key{{A: 4711, B: 42}},
				Finders: []container.FinderEntry{{Finder: "byAccount", Args: "4711"}}},
		}}}}
}

// The cost of a message's encoding and decoding, and of a reply's, on
// each message of every commit (issue 29):
//
//	go test -run '^$' -bench Codec -benchmem ./internal/coherence/
func BenchmarkCodec(b *testing.B) {
	m := stockOnlineAnnounce()
	// As the bus does: one buffer reused, one decoder a receiving
	// goroutine.
	var buf []byte
	data := appendMessage(nil, m)
	b.Run("encode-announce", func(b *testing.B) {
		for b.Loop() {
			buf = appendMessage(buf[:0], m)
		}
		b.ReportMetric(float64(len(data)), "bytes")
	})
	var d decoder
	b.Run("decode-announce", func(b *testing.B) {
		for b.Loop() {
			var got message
			if err := d.decode(data, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reply", func(b *testing.B) {
		for b.Loop() {
			buf = appendReply(buf[:0], "server-2-of-2", 123456)
			if _, _, _, err := decodeReply(buf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(buf)), "bytes")
	})
}

// Every kind of message reads back as it was written, and a message cut
// short anywhere, or of another format, is refused (never misread, never
// a panic).
func TestCodecRoundTrip(t *testing.T) {
	settle := stockOnlineAnnounce()
	settle.Kind, settle.Writes[0].Phase = kindSettle, container.Settle
	settle.Writes[0].Items[1].Finders = append(settle.Writes[0].Items[1].Finders, container.FinderEntry{Finder: "richerThan", All: true})
	settle.Writes[0].Items[0].Keys[0].S = "κλειδί"
	settle.Writes[0].Items[1].Created = []container.Key{{A: 4711, B: 43}, {A: 4711, B: 44}}
	settle.Sent = -5 // a clock before 1970 is still a number
	two := stockOnlineAnnounce()
	two.Writes = append(two.Writes, &container.Writes{Phase: container.Announce, Announced: 98766,
		Items: []container.Written{{Type: "Account", Sync: true, Keys: []container.Key{{A: 1}, {A: 2}}}}})
	msgs := map[string]*message{
		"announce":     stockOnlineAnnounce(),
		"two commits":  two,
		"settle":       settle,
		"heartbeat":    {Kind: kindHeartbeat, From: "s0", Seq: 7, Sent: 1, Members: []string{"s1", "s2"}, Applied: map[string]uint64{"s1": 3, "s2": 1 << 40}},
		"no members":   {Kind: kindHeartbeat, From: "s0", Applied: map[string]uint64{}},
		"fence notice": {Kind: kindFence, From: "s0", Seq: 8, Sent: 2, Fenced: "s2"},
		"claim":        {Kind: kindClaim, From: "s0", Seq: 9, Sent: 3, Claim: "Holding"},
		"claims":       {Kind: kindHeartbeat, From: "s0", Seq: 9, Sent: 4, Applied: map[string]uint64{"s1": 2}, Claims: []string{"Holding", "Item"}},
	}
	var d decoder
	for name, m := range msgs {
		data := appendMessage(nil, m)
		var got message
		if err := d.decode(data, &got); err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !reflect.DeepEqual(&got, m) {
			t.Errorf("%s: read back as\n%+v\nwant\n%+v", name, got, *m)
		}
		for n := range len(data) {
			var cut message
			if err := d.decode(data[:n], &cut); err == nil {
				t.Errorf("%s cut to %d of %d bytes: read without an error", name, n, len(data))
			}
		}
		other := append([]byte{codecVersion + 1}, data[1:]...)
		if err := d.decode(other, &got); err == nil {
			t.Errorf("%s of format %d: read without an error", name, codecVersion+1)
		}
	}
	data := appendReply(nil, "s1", 1<<33)
	if seq, from, skipped, err := decodeReply(data); err != nil || seq != 1<<33 || string(from) != "s1" || skipped {
		t.Errorf("reply read back as %d from %q, skipped %v (%v); want %d from s1", seq, from, skipped, err, uint64(1<<33))
	}
	for n := range len(data) {
		if _, _, _, err := decodeReply(data[:n]); err == nil {
			t.Errorf("reply cut to %d of %d bytes: read without an error", n, len(data))
		}
	}
	for _, want := range []bool{false, true} {
		answer := appendClaimAnswer(nil, "s1", 7, want)
		if seq, from, skipped, err := decodeReply(answer); err != nil || seq != 7 || string(from) != "s1" || skipped != want {
			t.Errorf("claim answer read back as %d from %q, skipped %v (%v); want 7 from s1, %v", seq, from, skipped, err, want)
		}
		if _, _, _, err := decodeReply(append(answer, 0)); err == nil {
			t.Errorf("claim answer with a byte past its end: read without an error")
		}
	}
}
