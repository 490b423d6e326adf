package reduce

// The generic kernels of the integer and float32/float64 types. Each
// operation is one typed loop (loops_typed.go), run over []T views of the
// buffers where the host is little-endian and all three slices are aligned
// for T (asTyped), the common case. Elsewhere (an element off its
// alignment, a big-endian host) the kernel copies a block of each operand
// into aligned scratch on the stack, in the host's byte order, runs the
// typed loop on the copies and copies the result out: twice as fast as
// decoding each element in place, which took a loop per type and operator
// (docs/measurements.md#misaligned-buffers-go-through-aligned-copies). The
// 16-bit floats, which Go has no type for, have loops of their own
// (loops_half.go).
//
// intCopies and floatCopies differ in which typed loops they call: they
// call them directly, not through a function value, so that the scratch
// stays on the stack.

// blockLen is the scratch's length in elements: at most 1 KiB per operand.
const blockLen = 128

func intCopies[T ordered](op Op, dst, a, b []byte) {
	var x, y [blockLen]T
	for len(dst) > 0 {
		xs, ys, n := copyIn(x[:], y[:], a, b)
		switch op {
		case Sum:
			sumTyped(xs, xs, ys)
		case Prod:
			prodTyped(xs, xs, ys)
		case Max:
			maxTyped(xs, xs, ys)
		default:
			minTyped(xs, xs, ys)
		}
		copyOut(dst, xs)
		dst, a, b = dst[n:], a[n:], b[n:]
	}
}

func floatCopies[T float](op Op, dst, a, b []byte) {
	var x, y [blockLen]T
	for len(dst) > 0 {
		xs, ys, n := copyIn(x[:], y[:], a, b)
		switch op {
		case Sum:
			sumFloatTyped(xs, xs, ys)
		case Prod:
			prodFloatTyped(xs, xs, ys)
		case Max:
			maxFloatTyped(xs, xs, ys)
		default:
			minFloatTyped(xs, xs, ys)
		}
		copyOut(dst, xs)
		dst, a, b = dst[n:], a[n:], b[n:]
	}
}

// row is a row of genericLoops: the four typed loops of one type, each on
// views where the buffers allow them, else through copies.
func row[T any](sum, prod, max, min func(dst, a, b []T), copies func(op Op, dst, a, b []byte)) [numOps]loop {
	slow := perOp(copies)
	return [numOps]loop{
		Sum:  typed(sum, slow[Sum]),
		Prod: typed(prod, slow[Prod]),
		Max:  typed(max, slow[Max]),
		Min:  typed(min, slow[Min]),
	}
}

// perOp binds each operator to a loop that takes it as an argument.
func perOp(f func(op Op, dst, a, b []byte)) [numOps]loop {
	var row [numOps]loop
	for _, op := range []Op{Sum, Prod, Max, Min} {
		row[op] = func(dst, a, b []byte) { f(op, dst, a, b) }
	}
	return row
}

// copyIn copies the first len(x) elements of a and b (or all, if fewer)
// into x and y in the host's byte order. It returns the filled parts and
// their length in bytes.
func copyIn[T any](x, y []T, a, b []byte) (xs, ys []T, n int) {
	xb, yb := asBytes(x), asBytes(y)
	n = copy(xb, a)
	copy(yb, b[:n])
	size := len(xb) / len(x)
	hostOrder(xb[:n], size)
	hostOrder(yb[:n], size)
	return x[:n/size], y[:n/size], n
}

// copyOut copies xs to the start of dst, little-endian.
func copyOut[T any](dst []byte, xs []T) {
	xb := asBytes(xs)
	hostOrder(xb, len(xb)/max(len(xs), 1))
	copy(dst, xb)
}
