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
