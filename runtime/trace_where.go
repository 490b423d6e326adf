package runtime

import "sync/atomic"

// whereWord returns the word of the control client that the executors
// store where this rank waits into (executor.Config.Where), which the
// heartbeats carry to hcclrun status; nil for a communicator made by
// Split, whose calls the job's heartbeats do not count, and for a
// control plane that has no such word (tests').
func (c *Comm) whereWord() *atomic.Uint64 {
	if !c.reportsProgress() {
		return nil
	}
	if w, ok := c.ctl.(interface{ Where() *atomic.Uint64 }); ok {
		return w.Where()
	}
	return nil
}
