package agent

import (
	"bytes"
	"testing"
)

// A result larger than a NATS message travels in chunks and is put back
// together whatever order they arrive in; a chunk out of place is refused.
func TestChunksReassemble(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), chunkSize/16*2+100) // just over two chunks
	parts := chunks(data)
	if len(parts) != 3 {
		t.Fatalf("%d bytes made %d chunks, want 3", len(data), len(parts))
	}
	var a assembly
	for _, i := range []int{2, 0, 0, 1} { // one duplicate
		done, err := a.add(i, len(parts), parts[i])
		if err != nil {
			t.Fatal(err)
		}
		if done != (i == 1) {
			t.Fatalf("after chunk %d done = %v", i, done)
		}
	}
	if !bytes.Equal(a.bytes(), data) {
		t.Error("reassembled result differs")
	}
	var b assembly
	if _, err := b.add(0, 2, nil); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][2]int{{0, 3}, {2, 2}, {-1, 2}} {
		if _, err := b.add(bad[0], bad[1], nil); err == nil {
			t.Errorf("chunk %d of %d accepted into a result of 2", bad[0], bad[1])
		}
	}
}
