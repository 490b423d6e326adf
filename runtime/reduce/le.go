package reduce

import (
	"encoding/binary"
	"math"
)

// Little-endian element access at any byte offset, for the 16-bit float
// loops and Divide: right on every host (the buffers are little-endian
// whatever the host) and at every alignment (a cast of a misaligned
// pointer is undefined on some CPUs and rejected by checkptr).

func ld16(p []byte) uint16    { return binary.LittleEndian.Uint16(p) }
func st16(p []byte, v uint16) { binary.LittleEndian.PutUint16(p, v) }
func ld32(p []byte) uint32    { return binary.LittleEndian.Uint32(p) }
func st32(p []byte, v uint32) { binary.LittleEndian.PutUint32(p, v) }
func ld64(p []byte) uint64    { return binary.LittleEndian.Uint64(p) }
func st64(p []byte, v uint64) { binary.LittleEndian.PutUint64(p, v) }

func ldf32(p []byte) float32    { return math.Float32frombits(ld32(p)) }
func stf32(p []byte, v float32) { st32(p, math.Float32bits(v)) }
func ldf64(p []byte) float64    { return math.Float64frombits(ld64(p)) }
func stf64(p []byte, v float64) { st64(p, math.Float64bits(v)) }
