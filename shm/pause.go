package shm

// Pause tells the CPU that the caller is spinning on memory another core
// writes, as every spin loop of the shm waits does between looks: x86's
// PAUSE, which holds the loop back for a few cycles instead of filling
// the core's pipeline with loads that all miss the same line. Where the
// core is shared with a sibling hyperthread running the peer rank, a loop
// without it takes the peer's execution slots. Measured on the KVM machine
// of 2026-12-02, whose two CPUs are at times placed so that an exchange of
// one line takes 60 ns instead of 270 (siblings, we believe): 8-byte
// AllReduce at np 2 with the shmlink calls' locks removed took 0.38 us a
// call without a pause in the wait loop and 0.26 with one (0.30 before
// either change); in the other placement 0.51, 0.48 and 0.53.
func Pause() { cpuPause() }
