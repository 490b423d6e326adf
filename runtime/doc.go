// Package runtime is the library that the programs hcclrun starts import to
// join their job and run collectives:
//
//	import hccl "github.com/hcclrun/hcclrun/runtime"
//
//	comm, err := hccl.Init(ctx)          // reads the environment hcclrun set
//	defer comm.Close()
//	err = hccl.AllReduce(ctx, comm, grads, grads, hccl.Sum)
//
// # The data path of one collective
//
//  1. The front (this package) validates the arguments, derives the element
//     type from T and takes the communicator's next sequence number.
//  2. The selector picks an algorithm for (collective, size, topology);
//     HCCL_ALGO can force one.
//  3. The algorithm (package algo) builds this rank's plan (package plan):
//     ordered steps of sends, receives and reductions over regions of the
//     caller's buffers and of scratch.
//  4. The executor (package executor) runs the plan over links to the peers
//     (package transport: TCP between servers, shared memory within one),
//     segment by segment, reducing with the kernels of package reduce.
//
// # Concurrency and ordering
//
// A Comm runs one collective at a time; concurrent calls on one Comm are
// serialised. As with MPI and NCCL, every rank must call the collectives of
// a communicator in the same order with matching arguments. A rank that
// does not gets ErrMismatch naming both ranks and both calls, and the job's
// other ranks get ErrAborted.
//
// # Errors
//
// Every error of a collective is an *OpError naming the collective, the
// algorithm, the rank, the peer and the step; errors.Is tells ErrMismatch,
// ErrAborted, ErrInvalidArgument and ErrClosed apart. A failed collective
// leaves the communicator aborted: later calls fail fast with ErrAborted.
package runtime
