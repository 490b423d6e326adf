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
//     type from T and takes the communicator's next sequence number
//     (collectives.go, call.go).
//  2. The selector (package selector) prices the call with every algorithm
//     that can run it and picks the cheapest (select.go asks it); HCCL_ALGO
//     can force one. Each algorithm's cost is a file of its own,
//     selector/shape_<algorithm>.go, and the model's constants a table,
//     selector/default.tuning, that HCCL_TUNING_FILE can replace.
//  3. The algorithm (package algo) builds this rank's plan (package plan):
//     ordered steps of sends, receives and reductions over regions of the
//     caller's buffers and of scratch.
//  4. The executor (package executor) runs the plan over links to the
//     peers, segment by segment (the selector's segment, at most a
//     quarter of the shm ring). A call the selector gives several
//     channels (AllReduce, Broadcast and Reduce only: their results are
//     elementwise, so contiguous ranges of elements split them exactly)
//     runs as that many plans at once, one per range, each over a link
//     set of its own (its own shm rings and TCP sockets) with an executor
//     of its own, on goroutines joined before the call returns
//     (channels.go); a failure on any of them fails the call and shuts
//     every channel's links. By default only calls of 16 to 32 MiB over
//     TCP get two (docs/measurements.md#channels-where-they-win);
//     HCCL_MIN_NCHANNELS and HCCL_MAX_NCHANNELS (or NCCL's spellings)
//     bound the count, up to 16.
//  5. The links come from an ordered table of transports (package
//     transport; transports.go builds it): shared memory (transport/shmlink)
//     for the peers on this server, then TCP (transport/tcplink); as in
//     NCCL the first that can connect two ranks links them, on a plan's
//     first need (switchboard.go, linkset.go). Both speak one frame format, internal/wire.
//  6. Reductions run the kernels of package reduce; copies and spin-wait
//     hints are internal/cpu's.
//
// Every frame carries the call's sequence number and descriptor
// (collective, type, operator, root, count), the transfer's ordinal on its
// link and the segment's offset and length; a receiver that gets another
// frame than its plan expects fails with ErrMismatch. Rooted and empty
// plans get an exchange of empty frames around the ring, in their first
// step where it fits (callcheck.go), so that ranks that disagree always
// receive something from each other. The rank table (table.go) tells
// when the launcher bound the ranks to CPUs how many CPUs they share, and
// when some host has more ranks than CPUs how fast a shared core changes
// hands (the launcher's measurement, which the selector prices with).
//
// # Servers
//
// Every call carries the communicator's server layout (plan.Layout: which
// server each rank is on; servers may differ in size and their ranks need
// not be contiguous), which every rank must hold alike: the hierarchical
// algorithms build on it, mesh and one-shot refuse a layout of several
// servers, and the selector prices by it (selector.TopoOf; HCCL_DEBUG=INFO
// logs servers=N). It comes from Job.Servers or Job.RanksPerServer when a
// test sets them, else from the rank table's servers, which the launcher
// writes from the hosts it started the ranks on and every rank reads
// alike, else from the host identities the ranks published: rank 0 groups
// them and publishes the grouping, which the others read (layout.go), one
// lookup each rather than one per peer. The layout is fixed for the
// communicator's life, so the plan cache need not key on it.
//
// # Memory peers can map
//
// MemAlloc (memalloc_unsafe.go) hands out memory that the rank's peers on
// the host map too (shm.Region), as NCCL's ncclMemAlloc does: a large
// payload sent from it is copied by the receiver out of its own mapping
// instead of being read with process_vm_readv, which takes several times
// as long (docs/performance.md). Buffers a job sends again and again
// belong there; collectives take any slice.
//
// # Joining and links
//
// Init connects to the launcher's control plane (netio/control), gathers
// the rank's topology facts (package topo), opens a listener on every
// transport of its table (TCP on the address of its route to the launcher,
// or on the interface HCCL_SOCKET_IFNAME names; shared memory on an
// abstract unix socket), publishes their endpoints, and waits for every
// rank. Links open when a plan first needs a peer, so a rank has links
// only to the peers its algorithms talk to (Comm.Links; hcclrun topo
// prints a job's, Comm.Topology its servers); on a host that is not
// crowded Init itself makes a first AllReduce of 4 bytes, which opens the
// small calls' links, and warms the code of the first calls (warmup.go).
// How large a shm link's rings are, whether their pages are read ahead and
// how a waiting rank polls, yields and sleeps follow the host's ranks per
// CPU (shmlink.Host); docs/performance.md, "Start-up at scale", has the
// figures.
//
// A program started by `srun --mpi=pmi2` instead of hcclrun (no HCCL_RANK,
// a PMI_FD) joins through Slurm (pmi.go, internal/pmi2): slurmstepd tells
// each rank its rank, the size and every rank's node; rank 0 serves the
// control plane itself, on the interface HCCL_SOCKET_IFNAME names or the
// chooser's, with a fresh job key, both published in the PMI key-value
// space; from there Init goes on as above. That server aborts the job
// when a rank is lost, and rank 0's last Close stops it once the others
// have left. srun without PMI-2 (PMI_FD unset) fails Init with what to run
// instead.
//
// # Knobs
//
// Beyond the contract's (HCCL_ALGO, HCCL_DEBUG, HCCL_SOCKET_IFNAME,
// HCCL_SHM_DISABLE, HCCL_BUFFSIZE, HCCL_CONNECT_TIMEOUT, HCCL_EXEC_TIMEOUT),
// env.go reads HCCL_TUNING_FILE (the selector's constants),
// HCCL_MIN_NCHANNELS and HCCL_MAX_NCHANNELS (the channels' bounds),
// HCCL_SHM_DIRECT (which collectives hand large payloads over in place;
// unset, the calls a job makes again and again are timed in place and
// through the rings, and go the faster: posttune.go),
// HCCL_SHM_SPLICE_DISABLE (in-place reads with or without the pipes, =0
// or =1; unset, a probe of the host decides), HCCL_SOCKET_CONGESTION (the
// TCP data links' congestion control, cubic unless it names another or
// system) and HCCL_SHM_SOCKET_TAG (for tests only: a fixed tail for the
// shared-memory socket names, which are otherwise unguessable and
// published through the control plane, so that a test can make one
// collide). The options of Init (WithAlgo, WithBufferSize, ...) override
// the variables. HCCL_BUFFSIZE reads as HCCL reads it, a bare number of
// MB (HCCL_BUFFSIZE=200), or bytes with a unit (4M, 64K, 65536B); HCCL_ALGO
// takes HCCL's level0/level1 forms beside ours (docs/selector.md). What the
// defaults were measured at is in docs/measurements.md.
//
// # Observability
//
// HCCL_TRACE=DIR records the job communicator's calls and every op of
// their plans (with the time each receive waited for its peer) in a ring
// of the last HCCL_TRACE_EVENTS events, written to DIR/rank-<rank>.json
// at Close, after a failed call and on SIGTERM, SIGINT or SIGHUP
// (trace.go, package trace; hcclrun trace merge makes one timeline);
// HCCL_REPORT=1 tallies the calls for hcclrun --report. Whatever the
// knobs, the executor stores where the rank waits (step and peer) into a
// word of the control client that the heartbeats carry, which hcclrun
// status shows (trace_where.go). docs/tracing.md tells how to read them,
// docs/performance.md#tracing-overhead what they cost.
//
// # Failures
//
// The first op that fails aborts the job through the control plane and
// shuts this rank's links (transport.Link.Shut: blocked calls fail, the
// memory stays mapped until Close releases the links, when no collective
// runs), so no peer waits for a rank that gave up; peers then fail with
// ErrAborted naming the cause. A program that handles a failure itself
// calls Comm.Abort(reason), NCCL's ncclCommAbort, to the same effect:
// every rank's running and later calls fail with ErrAborted naming the
// rank and the reason. HCCL_EXEC_TIMEOUT arms one timer per
// communicator; when it fires the error names the call, its number and
// the ranks that have not arrived, STUCK or LOST, from the progress every
// rank reports in its heartbeats. HCCL_HEARTBEAT_TIMEOUT (seconds,
// default 10) is read by hcclrun, not here: a rank silent on the control
// plane for that long is declared lost.
//
// # Concurrency and ordering
//
// A Comm runs one collective at a time; concurrent calls on one Comm are
// serialised (communicators made by Split run independently). As with MPI and NCCL, every rank must call the collectives of
// a communicator in the same order with matching arguments. A rank that
// does not gets ErrMismatch naming both ranks and both calls, and the job's
// other ranks get ErrAborted.
//
// # Sub-communicators
//
// Comm.Split(ctx, color, key) divides a communicator's ranks as
// ncclCommSplit and MPI_Comm_split do (split.go): the ranks of one color
// make a child numbered by key, ties broken by their rank in the parent;
// a negative color (NoColor) opts out (Split returns nil, nil). Split is a
// collective on the parent, one AllGather of every rank's color and key,
// so every rank calls it in the same order as the parent's other calls.
// A child has its own numbering (Rank, Size, LocalRank, LocalSize,
// Topology, Links and its errors name its ranks; abort reasons name the
// job's rank too), its servers (the parent's restricted to its ranks)
// and so its own algorithm choices, its own links, executor, selector,
// lock, sequence numbers and plan cache; it shares with every other
// communicator of the rank the listeners, the published endpoints and
// topology facts, and the control connection. So collectives on a parent
// and its children, and on sibling children, run at once from different
// goroutines. A child's id, the communicator part of its links' tags, is
// a hash of its parent's id and the parent's count of splits, the first
// of a few candidates that no rank of the parent has in use. Children
// may outlive their parent: the last communicator of a rank to close
// leaves the job. An abort anywhere breaks every communicator of the
// job. HCCL_EXEC_TIMEOUT bounds a child's calls too, but the heartbeats
// carry the progress of the job's communicator only (the one Init
// returned): a child's timeout names the communicator and which of its
// ranks went silent, not the call each has reached.
//
// # Graph mode
//
// A training step that makes the same collectives every time can record
// them once and replay them:
//
//	g := hccl.NewGraph(comm)
//	hccl.GraphAllReduce(g, grad1, grad1, hccl.Sum) // every collective has a Graph* form
//	hccl.GraphAllReduce(g, grad2, grad2, hccl.Sum)
//	exe, err := g.Compile(ctx) // every rank, once
//	for step := ... { fill the buffers; err = exe.Run(ctx) }
//	exe.Close()
//
// A graph holds the buffers, not their contents: each Run reads and writes
// them as they are then. Compile checks once that every rank recorded the
// same graph with the same fusion cap (ErrMismatch, on every rank, naming
// the first differing node and two ranks that differ), then rewrites it,
// alike on every rank however each one's buffers alias: a ReduceScatter
// followed by the AllGather of its result becomes one AllReduce where
// every rank's buffers allow it and the selector prices the AllReduce
// cheaper; runs of adjacent AllReduces of one dtype and op under 256 KiB,
// none reading what an earlier one of the run writes, become one
// AllReduce over a staging buffer of at most Graph.FuseBytes
// (HCCL_GRAPH_FUSE_BYTES, in bytes, 25M by default as DDP's buckets, 0
// for none), where the selector prices that and the copies below the
// calls. It then binds each collective left to its algorithm and plan;
// HCCL_DEBUG=INFO logs the result. A replay holds the communicator from
// its first collective to its last, chooses nothing (but after SetAlgo or
// SetChannels, which make it bind again), keeps the frames' usual checks,
// and fails as the collectives do when a peer dies.
//
// # Errors
//
// Every error of a collective is an *OpError naming the collective, the
// algorithm, the rank, the peer and the step; errors.Is tells ErrMismatch,
// ErrAborted, ErrInvalidArgument, ErrClosed and ErrTimeout apart, and
// reaches the cause they wrap (a rank table that cannot be read, the
// context's error). A collective that fails once it has started (with any
// error but ErrInvalidArgument) leaves the communicator aborted: later
// calls fail fast with ErrAborted.
package runtime
