package runtime

// HoldSplitCandidates registers on c's rank a link set for each of the
// first n ids the next Split of c tries, as communicators of the rank
// whose ids met them would hold them, and returns their release.
func HoldSplitCandidates(c *Comm, n int) (release func(), err error) {
	c.splitMu.Lock()
	defer c.splitMu.Unlock()
	var sets []*linkSet
	release = func() {
		for _, s := range sets {
			s.close()
		}
	}
	for i := range n {
		s, err := newLinkSet(c.links.board, linkTag(childID(c.id, c.splits, i), 0), []int{c.job.Rank}, 0)
		if err != nil {
			release()
			return nil, err
		}
		sets = append(sets, s)
	}
	return release, nil
}
