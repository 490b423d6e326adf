package plan

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func r(b Buf, off, n int) Region { return Region{Buf: b, Off: off, Len: n} }

func sendOp(peer int, src Region) Op { return Op{Kind: OpSend, Peer: peer, Src: src} }
func recvOp(peer int, dst Region) Op { return Op{Kind: OpRecv, Peer: peer, Dst: dst} }

func steps(ops ...[]Op) []Step {
	var s []Step
	for _, o := range ops {
		s = append(s, Step{Ops: o})
	}
	return s
}

// mem4 gives every rank 4 send elements (rank*10+i) and 4 receive elements.
func mem4(n int) []SimRank {
	rs := make([]SimRank, n)
	for i := range rs {
		rs[i] = SimRank{Mem: make([]int64, 8), Send: Window{Len: 4}, Recv: Window{Off: 4, Len: 4}}
		for k := 0; k < 4; k++ {
			rs[i].Mem[k] = int64(i*10 + k)
		}
	}
	return rs
}

func sum(a, b int64) int64 { return a + b }

func TestSimulateFaults(t *testing.T) {
	tests := []struct {
		name  string
		steps [][]Step // per rank
		ranks []SimRank
		want  error
		text  string // substring of the error
	}{
		{
			name: "send without receive",
			steps: [][]Step{
				steps([]Op{sendOp(1, r(BufSend, 0, 4))}),
				nil,
			},
			want: ErrDeadlock, text: "rank 0 step 0 waits on [Send send[0:4] -> 1]",
		},
		{
			name: "both receive first",
			steps: [][]Step{
				steps([]Op{recvOp(1, r(BufRecv, 0, 4))}, []Op{sendOp(1, r(BufSend, 0, 4))}),
				steps([]Op{recvOp(0, r(BufRecv, 0, 4))}, []Op{sendOp(0, r(BufSend, 0, 4))}),
			},
			want: ErrDeadlock, text: "2 ranks stuck",
		},
		{
			// Would work with unbounded buffering, must not pass here.
			name: "both send first in separate steps",
			steps: [][]Step{
				steps([]Op{sendOp(1, r(BufSend, 0, 4))}, []Op{recvOp(1, r(BufRecv, 0, 4))}),
				steps([]Op{sendOp(0, r(BufSend, 0, 4))}, []Op{recvOp(0, r(BufRecv, 0, 4))}),
			},
			want: ErrDeadlock,
		},
		{
			name: "length mismatch",
			steps: [][]Step{
				steps([]Op{sendOp(1, r(BufSend, 0, 3))}),
				steps([]Op{recvOp(0, r(BufRecv, 0, 4))}),
			},
			want: ErrLength, text: "sends 3 elements",
		},
		{
			name: "beyond the buffer",
			steps: [][]Step{
				steps([]Op{sendOp(1, r(BufSend, 2, 4))}),
				steps([]Op{recvOp(0, r(BufRecv, 0, 4))}),
			},
			want: ErrBounds,
		},
		{
			name: "absent buffer",
			steps: [][]Step{
				steps([]Op{sendOp(1, r(BufRecv, 0, 0))}),
				steps([]Op{recvOp(0, r(BufRecv, 0, 0))}),
			},
			ranks: func() []SimRank { m := mem4(2); m[0].Recv = Window{Absent: true}; return m }(),
			want:  ErrBounds,
		},
		{
			name: "two sends to one peer in a step",
			steps: [][]Step{
				steps([]Op{sendOp(1, r(BufSend, 0, 2)), sendOp(1, r(BufSend, 2, 2))}),
				steps([]Op{recvOp(0, r(BufRecv, 0, 2))}, []Op{recvOp(0, r(BufRecv, 2, 2))}),
			},
			want: ErrConflict,
		},
		{
			name: "receive into what a send reads",
			steps: [][]Step{
				steps([]Op{sendOp(1, r(BufRecv, 0, 2)), recvOp(1, r(BufRecv, 1, 2))}),
				steps([]Op{sendOp(0, r(BufSend, 0, 2)), recvOp(0, r(BufRecv, 0, 2))}),
			},
			want: ErrConflict,
		},
		{
			// In place the send and receive windows are the same memory.
			name: "aliased windows conflict",
			steps: [][]Step{
				steps([]Op{sendOp(1, r(BufSend, 0, 2)), recvOp(1, r(BufRecv, 0, 2))}),
				steps([]Op{sendOp(0, r(BufSend, 0, 2)), recvOp(0, r(BufRecv, 2, 2))}),
			},
			ranks: func() []SimRank { m := mem4(2); m[0].Recv = m[0].Send; return m }(),
			want:  ErrConflict,
		},
		{
			name:  "send to self",
			steps: [][]Step{steps([]Op{sendOp(0, r(BufSend, 0, 1))})},
			want:  ErrMalformed,
		},
		{
			name:  "overlapping copy",
			steps: [][]Step{steps([]Op{{Kind: OpCopy, Src: r(BufSend, 0, 2), Dst: r(BufSend, 1, 2)}})},
			want:  ErrConflict,
		},
		{
			name:  "copy of unequal lengths",
			steps: [][]Step{steps([]Op{{Kind: OpCopy, Src: r(BufSend, 0, 2), Dst: r(BufRecv, 0, 3)}})},
			want:  ErrMalformed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plans := make([]*Plan, len(tt.steps))
			for i, s := range tt.steps {
				plans[i] = &Plan{Coll: AllReduce, Algo: "test", Rank: i, Size: len(tt.steps), Steps: s}
			}
			ranks := tt.ranks
			if ranks == nil {
				ranks = mem4(len(plans))
			}
			_, err := Simulate(plans, ranks, sum)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.text) {
				t.Errorf("error %q does not contain %q", err, tt.text)
			}
		})
	}
}

// TestSimulateExchange runs a correct two-rank plan: a swap, then a
// RecvReduce in place, then a local Reduce and Copy, and checks the data,
// the order of the reduction's arguments and the statistics.
func TestSimulateExchange(t *testing.T) {
	p0 := steps(
		[]Op{sendOp(1, r(BufSend, 0, 4)), recvOp(1, r(BufRecv, 0, 4))},
		[]Op{{Kind: OpRecvReduce, Peer: 1, Src: r(BufRecv, 0, 2), Dst: r(BufRecv, 0, 2)}},
		[]Op{{Kind: OpReduce, Src: r(BufSend, 0, 2), Dst: r(BufRecv, 2, 2)}},
		[]Op{{Kind: OpCopy, Src: r(BufRecv, 2, 2), Dst: r(BufScratch, 0, 2)}},
	)
	p1 := steps(
		[]Op{recvOp(0, r(BufRecv, 0, 4)), sendOp(0, r(BufSend, 0, 4))},
		[]Op{sendOp(0, r(BufSend, 2, 2))},
	)
	plans := []*Plan{
		{Coll: AllReduce, Rank: 0, Size: 2, Steps: p0, ScratchLen: 3},
		{Coll: AllReduce, Rank: 1, Size: 2, Steps: p1},
	}
	ranks := mem4(2)
	// a - b shows which argument is the local one.
	res, err := Simulate(plans, ranks, func(a, b int64) int64 { return a*100 + b })
	if err != nil {
		t.Fatal(err)
	}
	// rank 0: recv = rank 1's send {10,11,12,13}; then recv[0:2] = recv*100 + {12,13};
	// recv[2:4] = recv[2:4]*100 + send[0:2].
	want0 := []int64{0, 1, 2, 3, 1012, 1113, 1200, 1301}
	if !slices.Equal(ranks[0].Mem, want0) {
		t.Errorf("rank 0 memory %v, want %v", ranks[0].Mem, want0)
	}
	if !slices.Equal(ranks[0].Scratch[:2], []int64{1200, 1301}) || ranks[0].Scratch[2] != scratchPoison+2 {
		t.Errorf("rank 0 scratch %v", ranks[0].Scratch)
	}
	if !slices.Equal(ranks[1].Mem[4:], []int64{0, 1, 2, 3}) {
		t.Errorf("rank 1 received %v", ranks[1].Mem[4:])
	}
	if res.Transfers != 3 || res.Elems != 10 || res.Rounds != 2 || !slices.Equal(res.SentElems, []int64{4, 6}) {
		t.Errorf("stats %+v", res)
	}
	if !slices.Equal(res.Informed, []int{2, 2}) {
		t.Errorf("informed %v", res.Informed)
	}
}
