package main

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFormatLinks(t *testing.T) {
	// Three ranks: 0-1 shm, 1-2 tcp, 0-2 none.
	marks := []uint8{
		linkNone, linkShm, linkNone,
		linkShm, linkNone, linkTCP,
		linkNone, linkTCP, linkNone,
	}
	got := formatLinks(3, marks, []int32{64 << 10, 64 << 10, 0})
	for _, want := range []string{
		"2 links: 1 shm, 1 tcp; per rank min 1, median 1, max 2 of 2 peers",
		"rings: 64 KiB each, 128 KiB of /dev/shm in all (42 KiB per rank)",
		"r0 XS. 1\n", "r1 SXT 2\n", "r2 .TX 1\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if big := formatLinks(maxLinkMatrix+1, make([]uint8, (maxLinkMatrix+1)*(maxLinkMatrix+1)), make([]int32, maxLinkMatrix+1)); strings.Contains(big, "\nr0 ") {
		t.Errorf("a matrix for %d ranks:\n%s", maxLinkMatrix+1, big)
	}
}

// TestTopoLinksGrowSlowly: on a crowded host the first collectives open
// a few links per rank (dissemination, rhd), not one to every peer, and
// the rings shrink: a rank's shared memory stays a small multiple of the
// ring, whatever the rank count.
func TestTopoLinksGrowSlowly(t *testing.T) {
	const n = 24
	r := hcclrun(t, 120*time.Second, "", "topo", "-np", strconv.Itoa(n), "--oversubscribe")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(\d+) links: (\d+) shm, 0 tcp; per rank min (\d+), median (\d+), max (\d+) of (\d+) peers`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no link summary:\n%s", r.stdout)
	}
	maxPer, _ := strconv.Atoi(m[5])
	// dissemination and rhd: about 2 log2(n) peers each, far below n-1.
	if bound := 2*5 + 2; maxPer > bound || m[6] != fmt.Sprint(n-1) {
		t.Errorf("a rank opened %s links of %s peers, want at most %d:\n%s", m[5], m[6], bound, r.stdout)
	}
	if !strings.Contains(r.stdout, "shared-memory rings: 1 MiB each") {
		t.Errorf("rings not shrunk to 1 MiB for %d ranks:\n%s", n, r.stdout)
	}
}
