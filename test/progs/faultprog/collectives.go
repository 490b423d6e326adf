package main

import (
	"fmt"

	hccl "github.com/hcclrun/hcclrun/runtime"
)

// wrongResult is a call that returned nil with a wrong result.
type wrongResult struct {
	s    *spec
	what string
}

func (e *wrongResult) Error() string { return fmt.Sprintf("%v: wrong result: %s", e.s, e.what) }

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// base seeds the values of rank in call; at(base, i) is element i's hash.
func base(seed, call uint64, rank int) uint64 {
	return mix(seed*0x9e3779b97f4a7c15 ^ mix(call+1) ^ uint64(rank+1)*0xd1b54a32d192ed03)
}

func at(b uint64, i int) uint64 { return mix(b + uint64(i)*0x9e3779b97f4a7c15) }

// a2avPair is the index of element k sent from a rank to rank to.
func a2avPair(to, k int) int { return to<<40 | k }

// runCall runs s with element type T and checks this rank's result.
func runCall[T hccl.Element](st *soakState, o ops[T], s *spec) error {
	ctx, c := st.ctx, st.c
	n, r := c.Size(), c.Rank()
	bs := make([]uint64, n)
	for x := range n {
		bs[x] = base(st.seed, s.call, x)
	}
	b := bs[r]
	gen := func(h uint64) T { return o.gen(h, hccl.Sum) }
	fill := func(p []T, v T) {
		for i := range p {
			p[i] = v
		}
	}
	bad := func(format string, args ...any) error {
		return &wrongResult{s: s, what: fmt.Sprintf(format, args...)}
	}
	// expectReduced is the reduction over every rank of element i.
	expectReduced := func(i int) T {
		for x := range n {
			st.hs[x] = at(bs[x], i)
		}
		return o.reduce(s.op, st.hs)
	}
	switch s.kind {
	case kBarrier:
		return c.Barrier(ctx)

	case kAllReduce, kReduce:
		send := view[T](st.send, s.count)
		for i := range send {
			send[i] = o.gen(at(b, i), s.op)
		}
		recv := send
		if !s.inPlace || s.kind == kReduce {
			recv = view[T](st.recv, s.count)
			fill(recv, o.sentinel)
		}
		st.bytes += int64(len(send) * o.size)
		var err error
		if s.kind == kAllReduce {
			err = hccl.AllReduce(ctx, c, send, recv, s.op)
		} else {
			err = hccl.Reduce(ctx, c, send, recv, s.op, s.root)
		}
		if err != nil || s.kind == kReduce && r != s.root {
			return err
		}
		tamper(st, o, s, recv)
		for i, v := range recv {
			if want := expectReduced(i); v != want {
				return bad("element %d = %v, want %v", i, v, want)
			}
		}

	case kBroadcast:
		buf := view[T](st.send, s.count)
		if r == s.root {
			for i := range buf {
				buf[i] = gen(at(bs[s.root], i))
			}
		} else {
			fill(buf, o.sentinel)
		}
		st.bytes += int64(len(buf) * o.size)
		if err := hccl.Broadcast(ctx, c, buf, s.root); err != nil {
			return err
		}
		tamper(st, o, s, buf)
		for i, v := range buf {
			if want := gen(at(bs[s.root], i)); v != want {
				return bad("element %d = %v, want %v", i, v, want)
			}
		}

	case kAllGather:
		blk := s.count
		recv := view[T](st.recv, n*blk)
		fill(recv, o.sentinel)
		send := view[T](st.send, blk)
		if s.inPlace {
			send = recv[r*blk : (r+1)*blk]
		}
		for k := range send {
			send[k] = gen(at(b, k))
		}
		st.bytes += int64(len(recv) * o.size)
		if err := hccl.AllGather(ctx, c, send, recv); err != nil {
			return err
		}
		tamper(st, o, s, recv)
		for i, v := range recv {
			if want := gen(at(bs[i/max(blk, 1)], i%max(blk, 1))); v != want {
				return bad("element %d (from rank %d) = %v, want %v", i, i/blk, v, want)
			}
		}

	case kReduceScatter:
		blk := s.count
		send := view[T](st.send, n*blk)
		for i := range send {
			send[i] = o.gen(at(b, i), s.op)
		}
		recv := send[r*blk : (r+1)*blk]
		if !s.inPlace {
			recv = view[T](st.recv, blk)
			fill(recv, o.sentinel)
		}
		st.bytes += int64(len(send) * o.size)
		if err := hccl.ReduceScatter(ctx, c, send, recv, s.op); err != nil {
			return err
		}
		tamper(st, o, s, recv)
		for k, v := range recv {
			if want := expectReduced(r*blk + k); v != want {
				return bad("element %d = %v, want %v", k, v, want)
			}
		}

	case kAlltoAll:
		blk := s.count
		send, recv := view[T](st.send, n*blk), view[T](st.recv, n*blk)
		for i := range send {
			send[i] = gen(at(b, i))
		}
		fill(recv, o.sentinel)
		st.bytes += int64(len(send) * o.size)
		if err := hccl.AlltoAll(ctx, c, send, recv); err != nil {
			return err
		}
		tamper(st, o, s, recv)
		for i, v := range recv {
			from, k := i/blk, i%blk
			if want := gen(at(bs[from], r*blk+k)); v != want {
				return bad("element %d from rank %d = %v, want %v", k, from, v, want)
			}
		}

	case kAlltoAllV:
		sc, sd, rc, rd := make([]int, n), make([]int, n), make([]int, n), make([]int, n)
		off := 0
		for _, j := range s.sendOrder[r] {
			off += s.gapsS[r][j]
			sd[j], sc[j] = off, s.counts[r][j]
			off += sc[j]
		}
		send := view[T](st.send, off)
		fill(send, o.sentinel)
		for j := range n {
			for k := range sc[j] {
				send[sd[j]+k] = gen(at(b, a2avPair(j, k)))
			}
		}
		off = 0
		for _, i := range s.recvOrder[r] {
			off += s.gapsR[r][i]
			rd[i], rc[i] = off, s.counts[i][r]
			off += rc[i]
		}
		recv := view[T](st.recv, off+2)
		fill(recv, o.sentinel)
		st.bytes += int64(len(send) * o.size)
		if err := hccl.AlltoAllV(ctx, c, send, sc, sd, recv, rc, rd); err != nil {
			return err
		}
		tamper(st, o, s, recv)
		for i := range n {
			for k := range rc[i] {
				if v, want := recv[rd[i]+k], gen(at(bs[i], a2avPair(r, k))); v != want {
					return bad("element %d from rank %d = %v, want %v", k, i, v, want)
				}
			}
		}
		for p, v := range recv {
			in := false
			for i := range n {
				if p >= rd[i] && p < rd[i]+rc[i] {
					in = true
				}
			}
			if !in && v != o.sentinel {
				return bad("recv[%d], outside every receive range, was overwritten with %v", p, v)
			}
		}
	}
	return nil
}

// tamper spoils one element of the first non-empty result checked at or
// after call st.corruptFrom (-corrupt-from), to prove that the checks catch
// a wrong result.
func tamper[T hccl.Element](st *soakState, o ops[T], s *spec, p []T) {
	if st.corruptFrom < 0 || s.call < uint64(st.corruptFrom) || len(p) == 0 {
		return
	}
	st.corruptFrom = -1
	i := len(p) / 2
	if p[i] == o.sentinel {
		p[i] = o.gen(12345, hccl.Sum)
	} else {
		p[i] = o.sentinel
	}
}
