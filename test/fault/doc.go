// Package fault is the fault-injection suite of issue 7: every case
// runs a real job through a built hcclrun, whose ranks are real processes
// of test/progs/faultprog, injects one fault (a rank killed or stopped,
// hcclrun killed, strangers on the control and data ports, mismatched
// collectives, bad AlltoAllV counts, a /dev/shm too small) and asserts, as
// a user would see it, a bounded time to a clear error and hcclrun's exit
// code; then that nothing of the job is left: no process, no /dev/shm
// entry, no listening socket.
//
// The soak runs 4 ranks through seeded random collectives, checking every
// result exactly and sampling goroutines, open fds and RSS. The normal
// suite runs 1,000 calls; the full 20,000 run only with HCCL_SOAK=1 or
// -run SoakFull:
//
//	HCCL_SOAK=1 go test -run Soak -v ./test/fault/
//
// Seeds are logged and can be forced with FAULTSUITE_SEED.
//
// The suite also plays a hostile local user (a second uid squatting or
// flooding the shared-memory sockets, intruders on the TCP ports), ranks
// that leave without Close or never call Init, a Ctrl-Z of hcclrun, two
// launchers in different PID namespaces sharing /tmp, and kills during
// Init (FAULTSUITE_KILLINIT_RANKS and FAULTSUITE_KILLINIT_ITERS raise the
// 16 ranks x 3 jobs it runs by default).
//
// The package has no code of its own; everything is in its tests.
package fault
