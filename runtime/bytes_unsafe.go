package runtime

import "unsafe"

// asBytes views s as its bytes, without copying. The collectives move and
// reduce elements as bytes; the element type travels separately.
func asBytes[T Element](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// sameStart tells whether a and b start at the same address (in-place
// calls), and overlap whether their memory ranges intersect.
func sameStart[T Element](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

func overlap[T Element](a, b []T) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	var zero T
	size := uintptr(unsafe.Sizeof(zero))
	a0 := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	b0 := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return a0 < b0+uintptr(len(b))*size && b0 < a0+uintptr(len(a))*size
}
