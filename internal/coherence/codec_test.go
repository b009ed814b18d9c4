package coherence

import (
	"testing"

	"github.com/tierbench/tierbench/internal/container"
)

// stockOnlineAnnounce is what a Stock-Online BuyStock commit announces:
// its account and its holding, with the holding finder's entry.
func stockOnlineAnnounce() *message {
	return &message{Kind: kindAnnounce, From: "server-1-of-2", Seq: 123456, Sent: 1764668000123456789,
		Writes: &container.Writes{Phase: container.Announce, Items: []container.Written{
			{Type: "Account", Sync: true, Keys: []container.Key{{A: 4711}}},
			{Type: "Holding", Sync: true, Keys: []container.Key{{A: 4711, B: 42}},
				Finders: []container.FinderEntry{{Finder: "byAccount", Args: "4711"}}},
		}}}
}

// The cost of a message's encoding and decoding, and of a reply's, on
// each message of every commit (issue 29):
//
//	go test -run '^$' -bench Codec -benchmem ./internal/coherence/
func BenchmarkCodec(b *testing.B) {
	m := stockOnlineAnnounce()
	data, err := encode(m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode-announce", func(b *testing.B) {
		for b.Loop() {
			if _, err := encode(m); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(data)), "bytes")
	})
	b.Run("decode-announce", func(b *testing.B) {
		for b.Loop() {
			var got message
			if err := decode(data, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	r := &reply{From: "server-2-of-2", Seq: 123456}
	rdata, err := encodeReply(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("reply", func(b *testing.B) {
		for b.Loop() {
			data, err := encodeReply(r)
			if err != nil {
				b.Fatal(err)
			}
			var got reply
			if err := decodeReply(data, &got); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(rdata)), "bytes")
	})
}
