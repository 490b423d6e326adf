// Package shmlink is the shared-memory transport: a transport.Link between
// two ranks of one host made of two shm rings, one per direction, in one
// segment.
//
// [Transport] is the first entry of the runtime's table of transports
// (transport.Transport): it can connect two ranks whose topology facts say
// they share a host, listens with a [ListenConfig] and dials with a
// [DialConfig]. The configuration is the rank's, per communicator: how its
// side of each link waits ([DialConfig].Wait, an shm.WaitPolicy), whether
// it offers shares of its copies (NoShare), the rings, pipes and reads in
// place. [Host] is the policy the runtime chooses them by, from the job's
// ranks on the host and the CPUs they share; nothing in the package is
// global to the process.
//
// # Set-up
//
// Of two ranks, the lower one listens ([Listen]) on the abstract unix socket
// "@hcclrun/<jobID>/<rank>/<tag>" and the higher one dials it ([Dial]).
// Abstract sockets belong to a network namespace, which is what we want:
// two ranks in different namespaces of one kernel cannot reach each other
// this way, and the runtime then uses TCP. Reaching the socket is not
// proof of sharing /dev/shm (a container may have its own); the runtime's
// topology facts decide whether to try shm at all, and this package only
// makes Dial fail clearly, never hang, when the peer is not there.
//
// Abstract sockets have no permissions, so the set-up defends itself
// against the host's other users: the tag is 128 random bits, which the
// runtime publishes through the authenticated control plane (name.go), so
// that nobody can take a rank's name before it binds it (a name taken
// anyway fails Listen with ErrNameTaken, and the runtime goes over TCP);
// both sides check that the other end runs as their own user
// (SO_PEERCRED, peercred.go) before anything else; at most MaxSetups
// connections of this user wait for their handshake, the oldest evicted
// by a newer one (admit.go); and the warnings about refused connections
// are rate-limited (internal/ratelog).
//
// Both sides authenticate the unix connection with the job key
// (wire.Handshake, purpose wire.PurposeShm). The dialer then creates one
// segment holding both rings, passes its descriptor over the connection
// (SCM_RIGHTS) and waits for the listener's acknowledgement. The segment's
// name was removed the moment it was created, so nothing is left in
// /dev/shm whatever happens to either rank. The connection stays open as a
// liveness channel: when a peer dies, the kernel closes its end, and
// shm.Watch aborts the rings so that a blocked call fails within
// milliseconds.
//
// # Frames
//
// A frame is a wire.Header (wire.HeaderSize bytes, wire encoding)
// followed by h.Len payload bytes, written through the ring. A payload
// larger than the ring streams through it in pieces, so the ring size
// bounds memory, not message size. A small frame goes in with a single
// commit. A frame of up to shm.FastFrameMax bytes (a header and 72 payload
// bytes: a small AllReduce, a Barrier's empty message) goes in one of the
// ring's fast boxes while one is free, which halves its latency
// (BenchmarkPingPong; docs/measurements.md#fast-boxes). The receiver
// either copies the payload out (RecvPayload) or looks at it in place,
// piece by piece (VisitPayload), to reduce straight from the ring.
//
// A large payload can skip the ring: TryPost writes only the header, marked,
// and the payload's address, and the receiver copies the payload straight
// out of the sender's memory, then acknowledges it (WaitPosted waits for
// that). One copy instead of two. The receiver reads what the sender could
// splice (vmsplice) into the link's pipe, up to 1 MiB, from the pipe, and
// the rest with process_vm_readv, which pins the sender's pages one by one
// from the receiver's side and costs more than the pipe on some hosts and
// no more on others, where the pipes cost instead (splice.go;
// DialConfig.NoPipes goes without them, and ProbePipes tells the two
// kinds of host apart: pipeprobe.go, docs/measurements.md#pipes). Each
// side proves at set-up that it can read the other's memory (direct.go);
// where the kernel refuses, or DialConfig.NoDirect says so
// (HCCL_SHM_DIRECT=0), everything goes through the rings; the runtime
// posts in place only the payloads of the collectives whose receivers just
// copy them (runtime/env.go: where the receiver reduces, the rings are
// faster). The kernel refuses, for instance, under Yama's ptrace_scope 1
// (Ubuntu's default: a process may read only its descendants, and ranks
// are siblings), for ranks of different users, and for non-dumpable
// processes; Open MPI's CMA has the same limits. The runtime logs at DEBUG whether a
// link reads in place (reads_in_place).
//
// A receiver that copies such a payload out offers the sender a share of
// the copy (share.go): the sender, idle in WaitPosted, writes pieces from
// the front straight into the receiver's destination (process_vm_writev)
// while the receiver reads pieces from the back, so that a Broadcast's
// root and leaf both copy. The runtime turns the offers off where ranks
// outnumber cores (Host.Shares, DialConfig.NoShare and ListenConfig.NoShare).
//
// # Ring size
//
// DialConfig.RingBytes is the data capacity per direction (the runtime maps
// HCCL_BUFFSIZE onto it); DefaultRingBytes is 4 MiB, the same default as
// NCCL_BUFFSIZE. Why that size: the executor pipelines a transfer in
// segments of up to 1 MiB, and a ring of four segments lets the sender
// copy the next segments while the receiver reduces the earlier ones, so
// that neither side waits in steady state. BenchmarkRingSize agrees:
// smaller rings hand off through a futex sleep and wake every few chunks,
// and a 16 MiB ring falls out of the cache
// (docs/measurements.md#ring-size). A full mesh of n local
// ranks would take n(n-1) rings, 224 MiB of /dev/shm for 8 ranks at 4 MiB,
// and 63 GiB for 128: so the runtime opens only the links its algorithms
// use, on first use, and on hosts of more than FullRings+1 ranks asks for
// smaller rings (HostRingBytes, Host.RingBytes), which bounds a rank's
// links to a constant times the ring. Correctness never depends on the size: the conformance
// suite also runs with 4 KiB rings.
//
// # Concurrency
//
// As transport.Link says: one goroutine may send while another receives;
// Shut may be called at any time from any goroutine and unblocks both;
// Close, which unmaps the segment, only when neither is in a call.
package shmlink
