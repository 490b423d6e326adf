package reduce

import "unsafe"

// asBytes views s, the kernels' aligned scratch, as bytes (loops.go).
func asBytes[T any](s []T) []byte {
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}
