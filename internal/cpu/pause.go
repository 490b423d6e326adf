package cpu

// Pause tells the CPU that the caller is spinning on memory another core
// writes, as every spin loop of the shm waits does between looks: x86's
// PAUSE, which holds the loop back for a few cycles instead of filling the
// pipeline with loads that all miss the same line, and leaves a sibling
// hyperthread running the peer rank its execution slots
// (docs/measurements.md#pause).
func Pause() { cpuPause() }
