package bench

// Layout is what one size of the sweep means for one collective on a given
// number of ranks, derived as nccl-tests derives it: count = size / element
// size, rounded down to a multiple of the rank count where the collective
// splits the buffer into one block per rank. The size column (Bytes) is the
// larger of the send and receive buffers, which is also the amount algbw
// divides by the time.
type Layout struct {
	Coll     Coll
	Ranks    int
	ElemSize int   // bytes per element
	Bytes    int64 // the size column: max(SendCount, RecvCount) * ElemSize
	// Count is the count column, nccl-tests' "paramcount": the count argument
	// of the call (per rank for AllGather, ReduceScatter and AlltoAll, the
	// mean block for AlltoAllV).
	Count     int
	SendCount int // elements in every rank's send buffer
	RecvCount int // elements in every rank's receive buffer
}

// NewLayout derives the layout of size bytes of elemSize-byte elements on n
// ranks.
func NewLayout(c Coll, size int64, elemSize, n int) Layout {
	l := Layout{Coll: c, Ranks: n, ElemSize: elemSize}
	count := int(size / int64(elemSize))
	switch c {
	case AllGather:
		l.Count = count / n
		l.SendCount, l.RecvCount = l.Count, l.Count*n
	case ReduceScatter:
		l.Count = count / n
		l.SendCount, l.RecvCount = l.Count*n, l.Count
	case AlltoAll:
		l.Count = count / n
		l.SendCount, l.RecvCount = l.Count*n, l.Count*n
	case AlltoAllV:
		l.Count = count / n
		v := newVCounts(n, l.Count)
		l.SendCount, l.RecvCount = v.total, v.total
	default: // AllReduce, Broadcast, Reduce
		l.Count, l.SendCount, l.RecvCount = count, count, count
	}
	l.Bytes = int64(max(l.SendCount, l.RecvCount)) * int64(elemSize)
	return l
}

// Bandwidth turns the time of one iteration into algbw and busbw in GB/s
// (10^9 bytes per second, as nccl-tests). A zero time gives zeros.
func (l Layout) Bandwidth(seconds float64) (algbw, busbw float64) {
	if seconds <= 0 {
		return 0, 0
	}
	algbw = float64(l.Bytes) / seconds / 1e9
	return algbw, algbw * l.Coll.BusFactor(l.Ranks)
}

// vCounts are the uneven block sizes of the AlltoAllV benchmark for a mean
// block of k elements: rank i sends rank j
//
//	c(i,j) = k/2 + k*((i+j) mod n)/(n-1)      (integer division)
//
// so blocks range from k/2 to 3k/2. Since (i+j) mod n runs over every
// residue once as either i or j varies, every rank sends and receives the
// same total, at most n*k, and the receiver can compute what each sender
// sent it without being told. One rank sends itself k.
type vCounts struct {
	n, k  int
	total int // sum over j of c(i,j), the same for every i (and over i for every j)
}

func newVCounts(n, k int) vCounts {
	v := vCounts{n: n, k: k}
	for j := range n {
		v.total += v.count(0, j)
	}
	return v
}

// count is c(i,j): the elements rank i sends rank j.
func (v vCounts) count(i, j int) int {
	if v.n == 1 {
		return v.k
	}
	return v.k/2 + v.k*((i+j)%v.n)/(v.n-1)
}

// sendLayout is rank i's sendCounts and sdispls (packed, in rank order).
func (v vCounts) sendLayout(i int) (counts, displs []int) {
	counts, displs = make([]int, v.n), make([]int, v.n)
	off := 0
	for j := range v.n {
		counts[j], displs[j] = v.count(i, j), off
		off += counts[j]
	}
	return counts, displs
}

// recvLayout is rank j's recvCounts and rdispls (packed, in rank order).
func (v vCounts) recvLayout(j int) (counts, displs []int) {
	counts, displs = make([]int, v.n), make([]int, v.n)
	off := 0
	for i := range v.n {
		counts[i], displs[i] = v.count(i, j), off
		off += counts[i]
	}
	return counts, displs
}
