package tpcapp

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"sync"
)

// The shipping label the shipping process sends SNE with each notice: a
// 4 × 6 inch thermal label at 203 dpi (812 × 1218 pixels, black and
// white), laid out as carriers print them: a frame, the sender's and the
// recipient's address blocks, a 2D code and a linear barcode of the
// order. Text is drawn as glyph-sized cells of random pixels, not fonts:
// what matters to the benchmark is an image of a label's size (about
// 11 KiB as PNG) made anew for every order. The PNG is written here, one
// bit a pixel: image/png reads a paletted image pixel by pixel, about
// 10 ms of CPU a label, which would make labels a large share of a
// saturated run's CPU; this takes about 2 ms.
const (
	labelWidth  = 812
	labelHeight = 1218
	labelStride = (labelWidth + 7) / 8
)

// label is a 1-bit image, one row after another, a set bit white.
type label []byte

func newLabel() label { return label(bytes.Repeat([]byte{0xff}, labelStride*labelHeight)) }

// fill blackens the rectangle [x0, x1) × [y0, y1).
func (l label) fill(x0, y0, x1, y1 int) {
	for y := y0; y < y1; y++ {
		row := l[y*labelStride : (y+1)*labelStride]
		for x := x0; x < x1; x++ {
			row[x>>3] &^= 0x80 >> (x & 7)
		}
	}
}

// shippingLabel draws order's label as a PNG; the same order, ship type
// and lines always draw the same bytes.
func shippingLabel(order int64, shipType string, lines int) ([]byte, error) {
	l := newLabel()
	rng := rand.New(rand.NewPCG(uint64(order), uint64(len(shipType))<<32|uint64(lines)))
	// The frame and the rules between the label's sections.
	l.fill(0, 0, labelWidth, 6)
	l.fill(0, labelHeight-6, labelWidth, labelHeight)
	l.fill(0, 0, 6, labelHeight)
	l.fill(labelWidth-6, 0, labelWidth, labelHeight)
	for _, y := range []int{230, 560, 900} {
		l.fill(0, y, labelWidth, y+4)
	}
	// Text: lines of glyphs, each an 8 × 12 pattern of pixels scaled by
	// scale, one in six a space.
	text := func(x0, y0, rows, cols, scale int) {
		for r := range rows {
			for c := range cols {
				if rng.IntN(6) == 0 {
					continue
				}
				bits := rng.Uint64() & (rng.Uint64() | rng.Uint64()) // glyphs are mostly white
				for gy := range 12 {
					for gx := range 8 {
						if bits>>((gy%8)*8+gx)&1 == 1 {
							x, y := x0+c*8*scale+gx*scale, y0+r*14*scale+gy*scale
							l.fill(x, y, x+scale, y+scale)
						}
					}
				}
			}
		}
	}
	text(30, 30, 7, 46, 2)
	text(30, 260, 5, 23, 4)
	text(300, 600, 10, 30, 2)
	text(30, 1170, 1, 46, 2)
	// The 2D code: modules of 6 pixels in a 40 × 40 square.
	for my := range 40 {
		for mx := range 40 {
			if rng.IntN(2) == 0 {
				l.fill(30+mx*6, 590+my*6, 36+mx*6, 596+my*6)
			}
		}
	}
	// The linear barcode of the order: bars 2 to 8 pixels wide.
	for x, i := 60, 0; x < labelWidth-60; i++ {
		w := 2 + 2*int((uint64(order)*0x9e3779b97f4a7c15>>uint(i%61))&3)
		if i%2 == 0 {
			l.fill(x, 940, min(x+w, labelWidth-60), 1160)
		}
		x += w
	}
	return l.png()
}

var zlibWriters sync.Pool

// png encodes the label: 1-bit grayscale, each row filtered with None.
func (l label) png() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(data)))
		b.Write(n[:])
		crc := crc32.NewIEEE()
		crc.Write([]byte(typ))
		crc.Write(data)
		b.WriteString(typ)
		b.Write(data)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		b.Write(n[:])
	}
	var ihdr [13]byte
	binary.BigEndian.PutUint32(ihdr[0:], labelWidth)
	binary.BigEndian.PutUint32(ihdr[4:], labelHeight)
	ihdr[8], ihdr[9] = 1, 0 // bit depth 1, grayscale; compression, filter and interlace 0
	chunk("IHDR", ihdr[:])
	var z bytes.Buffer
	// A zlib writer allocates about 1 MB: they are kept for the next
	// label.
	zw, _ := zlibWriters.Get().(*zlib.Writer)
	if zw == nil {
		var err error
		if zw, err = zlib.NewWriterLevel(&z, zlib.BestSpeed); err != nil {
			return nil, err
		}
	} else {
		zw.Reset(&z)
	}
	defer zlibWriters.Put(zw)
	row := make([]byte, 1+labelStride) // the filter byte, None, then the pixels
	for y := range labelHeight {
		copy(row[1:], l[y*labelStride:(y+1)*labelStride])
		zw.Write(row)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return b.Bytes(), nil
}
