package reduce

import (
	"bytes"
	"testing"
)

// FuzzKernelMatchesGeneric feeds arbitrary operand bytes, type, operator
// and misalignment to the kernels of every level and requires the generic
// loop's bits (and no write outside dst).
func FuzzKernelMatchesGeneric(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x7f, 0xff, 0xff, 0x7f, 0xff}, uint8(10), uint8(2), uint8(3))
	f.Add(bytes.Repeat([]byte{0x01, 0x7c, 0x00, 0xfc}, 40), uint8(8), uint8(0), uint8(1))
	f.Add(bytes.Repeat([]byte{0x00, 0x00, 0xc0, 0x7f, 0x01, 0x00, 0x80, 0xff}, 33), uint8(2), uint8(10), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, dt, opSel, off uint8) {
		defer useLevel(useLevel(level))
		d := allDTypes[int(dt)%len(allDTypes)]
		op := []Op{Sum, Prod, Max, Min}[opSel%4]
		size := d.Size()
		nb := len(data) / 2 / size * size
		a, b := data[:nb], data[nb:2*nb]
		want := make([]byte, nb)
		genericLoops[d][op](want, a, b)
		o := int(off % 8)
		for _, l := range availableLevels() {
			useLevel(l)
			k, _ := Kernel(d, op)
			buf := bytes.Repeat([]byte{0xee}, nb+16)
			dst := buf[o : o+nb]
			k(dst, a, b)
			if !bytes.Equal(dst, want) {
				i := firstBad(d, op, dst, want, false)
				t.Fatalf("%v %v %v: element %d = %#x, generic %#x", l, d, op, i, getElem(dst, i, size), getElem(want, i, size))
			}
			if !bytes.Equal(buf[:o], bytes.Repeat([]byte{0xee}, o)) || !bytes.Equal(buf[o+nb:], bytes.Repeat([]byte{0xee}, 16-o)) {
				t.Fatalf("%v %v %v: write outside dst", l, d, op)
			}
		}
	})
}
