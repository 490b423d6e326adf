package runtime

import (
	"context"
	"math/bits"
	"slices"
	"time"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/transport/shmlink"
)

// Whether a collective's large payloads cross shared memory in place or
// through the rings, timed per collective and size.
//
// In place the receiver copies the payload out of the sender's memory with
// one system call (process_vm_readv, or a pipe the sender spliced it
// into); through the rings the sender copies it into shared memory and the
// receiver copies it out, two copies in user space. Which costs less
// depends on the host and on the payload's cache state, which no probe at
// Init can see: a payload written just before the call, as a training
// step writes the gradients it then gathers, favours the rings, one
// written long before, as a benchmark's, in place
// (docs/measurements.md#timing-the-two-ways-per-call-class). So the choice
// is measured where it is made: calls of each class (postKey) go one way,
// then the other, and the faster one, by the median, serves the calls
// after them.
//
// The ranks stay in step without talking: they make the same collective
// calls in the same order with the same counts, so the n-th call of a
// class goes the same way on every rank. Before its first timed call a
// rank reads every page of its rings (linkSet.warmShm): fresh pages
// time many times slower than warm ones and would send the choice in
// place. The ranks then settle a class together, after a call whose
// number every rank knows, with an AllReduce of their medians, so that
// every rank takes the same way from the same sums: on their own
// timings ranks chose differently on a noisy machine, and such a class
// runs one way from one rank and the other from the other. AlltoAllV is
// left out (its counts differ between ranks, so its classes would not
// stay in step) and keeps the static choice, as does a job that sets
// HCCL_SHM_DIRECT.

const (
	// postAfter is how many calls of a class go in place, untimed, before
	// it is timed: the choice pays only for a class called again and
	// again, as a training loop calls its collectives, and timing costs
	// the calls it times (a class timed from its first calls and called
	// 26 times ran slower than the static choice).
	postAfter = 64
	// postBlock is how many calls in a row go each way while a class is
	// timed: first postBlock calls in place, then postBlock through the
	// rings. Alternated call by call, in place timed several times slower
	// than it runs alone, likely from the caches as the other way leaves
	// them. The first call of each block is not timed: it finds the caches
	// as the way before left them.
	postBlock = 6
	// postKeepMargin: a class leaves in place, the default that the
	// selector's prices assume (selector.Model.Posted), only when the
	// rings' summed medians are below this share of in place's.
	postKeepMargin = 0.95
)

// postKey is a class of calls that share the choice: the collective,
// whether the call is in place in the NCCL sense (an in-place AllGather
// sends from its receive buffer, which is never posted, so its timings
// would say nothing of the out-of-place calls'), and the bit length of its
// block's bytes (so 1 MiB and 1.5 MiB share one).
type postKey struct {
	coll    plan.Coll
	inPlace bool
	class   int
}

// postClass is what postTuner knows of one class.
type postClass struct {
	calls   int                // calls made so far
	took    [2][]time.Duration // timed calls: [0] through the rings, [1] in place
	decided bool
	post    bool // once decided: the way the class goes
}

// postTuner makes the choice for the calls of one communicator; it is
// used under Comm.mu.
type postTuner struct {
	classes map[postKey]*postClass
}

// postDecision is what choose says of a call: which way it goes, whether
// it is timed, and whether the ranks settle the class after it.
type postDecision struct {
	key     postKey
	post    bool
	timed   bool
	settles bool
}

// tunesPost reports whether calls of coll whose blocks are blockBytes
// long are timed both ways: only where the default posts them, and only
// when a block is long enough to be posted at all (shmlink.DirectMin).
func (k tunables) tunesPost(coll plan.Coll, blockBytes int) bool {
	mode := k.shmDirect()
	return mode == directCopied && mode.posts(coll) && coll != plan.AlltoAllV && blockBytes >= shmlink.DirectMin
}

// choose returns the way of the next call of coll, in place or not, with
// blocks of blockBytes. Before a call it times it calls warm
// (linkSet.warmShm).
func (t *postTuner) choose(coll plan.Coll, inPlace bool, blockBytes int, warm func()) postDecision {
	key := postKey{coll, inPlace, bits.Len(uint(blockBytes))}
	c := t.classes[key]
	if c == nil {
		if t.classes == nil {
			t.classes = make(map[postKey]*postClass)
		}
		c = &postClass{}
		t.classes[key] = c
	}
	if c.decided {
		return postDecision{key: key, post: c.post}
	}
	c.calls++
	if c.calls <= postAfter {
		return postDecision{key: key, post: true}
	}
	i := c.calls - 1 - postAfter // in place first, then the rings
	d := postDecision{key: key, post: i < postBlock, settles: i == 2*postBlock-1}
	if i%postBlock > 0 {
		d.timed = true
		warm()
	}
	return d
}

// record adds a timed call's duration.
func (t *postTuner) record(d postDecision, took time.Duration) {
	c := t.classes[d.key]
	way := 0
	if d.post {
		way = 1
	}
	c.took[way] = append(c.took[way], took)
}

// medians returns the class's medians through the rings and in place, and
// whether this rank has timed calls both ways.
func (c *postClass) medians() (rings, inPlace time.Duration, ok bool) {
	if len(c.took[0]) == 0 || len(c.took[1]) == 0 {
		return 0, 0, false
	}
	return medianDuration(c.took[0]), medianDuration(c.took[1]), true
}

// settlePost settles class key on every rank at once (see above): an
// AllReduce of how many ranks are ready and the sums of their medians,
// then the same decision everywhere. It runs at the same call of the
// class on every rank, inside runLocked.
func (c *Comm) settlePost(ctx context.Context, key postKey) error {
	cl := c.postTuner.classes[key]
	sums := make([]int64, 3) // ranks ready, rings, in place (ns)
	if rings, inPlace, ok := cl.medians(); ok {
		sums[0], sums[1], sums[2] = 1, int64(rings), int64(inPlace)
	}
	b := asBytes(sums)
	if err := c.runLocked(ctx, &call{
		req:   plan.Request{Coll: plan.AllReduce, Count: len(sums), InPlace: true},
		dtype: dtypeOf[int64](), op: Sum, reduces: true, send: b, recv: b,
	}); err != nil {
		return err
	}
	cl.decided = true
	cl.post = sums[0] < int64(c.job.Size) || float64(sums[1]) >= postKeepMargin*float64(sums[2])
	cl.took = [2][]time.Duration{}
	way := "rings"
	if cl.post {
		way = "in place"
	}
	c.log.Info("large shm payloads", "coll", key.coll.String(), "in_place_call", key.inPlace, "block_bytes_up_to", uint64(1)<<key.class-1, "way", way,
		"ranks_timed", sums[0], "median_rings", time.Duration(sums[1]/max(sums[0], 1)), "median_in_place", time.Duration(sums[2]/max(sums[0], 1)), "calls", cl.calls)
	return nil
}

// medianDuration returns the median of ds (the upper one of an even
// count); it sorts ds.
func medianDuration(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}
