package tpcapp

import (
	"bytes"
	"image/png"
	"testing"
)

// A label is a PNG of a 4 × 6 inch label at 203 dpi that image/png reads
// back pixel for pixel, of a label's size, the same for the same order
// and another for another order.
func TestShippingLabel(t *testing.T) {
	t.Parallel()
	a, err := shippingLabel(7, "AIR", 3)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatalf("the label is not a PNG image/png reads: %v", err)
	}
	if b := img.Bounds(); b.Dx() != labelWidth || b.Dy() != labelHeight {
		t.Errorf("label %v, want %d × %d", b, labelWidth, labelHeight)
	}
	// The frame is black, the corner inside it white.
	if r, _, _, _ := img.At(0, 0).RGBA(); r != 0 {
		t.Errorf("the frame's pixel (0, 0) is not black")
	}
	if r, _, _, _ := img.At(8, 8).RGBA(); r == 0 {
		t.Errorf("the pixel (8, 8) inside the frame is not white")
	}
	if len(a) < 8<<10 || len(a) > 64<<10 {
		t.Errorf("label of %d bytes, want a label's 8 to 64 KiB", len(a))
	}
	again, _ := shippingLabel(7, "AIR", 3)
	other, _ := shippingLabel(8, "AIR", 3)
	if !bytes.Equal(a, again) || bytes.Equal(a, other) {
		t.Errorf("order 7's label drawn twice equal: %v; order 8's the same as 7's: %v", bytes.Equal(a, again), bytes.Equal(a, other))
	}
}
