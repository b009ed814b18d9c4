package messaging

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/tierbench/tierbench/internal/testsvc"
)

// BenchmarkPublishReplicated is the relay's step, one publish with its
// message id answered by the stream, on a private three-node cluster with
// the stream on one server (R1) and on three (R3: the answer waits for a
// second server to store it), and on the embedded server for reference.
//
//	go test -run '^$' -bench PublishReplicated -benchtime 3000x ./internal/messaging/
func BenchmarkPublishReplicated(b *testing.B) {
	cluster := testsvc.NATSClusterOf3(b)
	for _, c := range []struct {
		name     string
		url      string
		replicas int
	}{{"embedded", "", 1}, {"cluster-R1", cluster.URLs(), 1}, {"cluster-R3", cluster.URLs(), 3}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			cfg := Config{URL: c.url, StreamReplicas: c.replicas}
			if c.url == "" {
				cfg.StoreDir = b.TempDir()
			}
			br, err := OpenWith(ctx, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer br.Close()
			name := fmt.Sprintf("BENCH_%s", c.name)
			q, err := br.Queue(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			defer br.DeleteQueue(ctx, name)
			data := []byte("1234567")
			b.ResetTimer()
			for i := range b.N {
				if _, err := q.Publish(ctx, strconv.Itoa(i), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
