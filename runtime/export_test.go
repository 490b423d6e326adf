package runtime

// Hooks for the tests of package runtime_test.

// ChannelsOpen is how many channels beyond the first c has opened.
func ChannelsOpen(c *Comm) int {
	c.chans.mu.Lock()
	defer c.chans.mu.Unlock()
	n := 0
	for _, ch := range c.chans.ch {
		if ch != nil {
			n++
		}
	}
	return n
}

// BreakChannel closes the links of c's channel ch (ch >= 1, opened), as
// a link that fails under a call does: the next transfer on them fails.
func BreakChannel(c *Comm, ch int) {
	c.chans.mu.Lock()
	defer c.chans.mu.Unlock()
	c.chans.ch[ch].links.shut()
}

// StepAlgos is the algorithm each step of e's replays is bound to
// ("" for one bound at each replay).
func StepAlgos(e *Executable) []string {
	algos := make([]string, len(e.steps))
	for i, s := range e.steps {
		if s.bound.ok {
			algos[i] = s.bound.plan.Algo
		}
	}
	return algos
}
