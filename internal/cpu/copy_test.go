package cpu

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestCopy holds Copy to copy over lengths on both sides of
// repMovsbMin and of streamMin, and misaligned starts, with bytes around the destination
// that must stay untouched.
func TestCopy(t *testing.T) {
	// The bound as small as it goes, so that the copies around it stay
	// small on a host whose bound is a quarter of a large L3.
	streamMin()
	defer func(old int) { stream.min = old }(stream.min)
	stream.min = streamFloor
	src := pattern(streamFloor+64, 7)
	for _, n := range []int{0, 1, 7, 63, 4095, repMovsbMin, repMovsbMin + 1, 65536 + 3, 1 << 20, streamFloor - 1, streamFloor + 5} {
		for _, off := range [][2]int{{0, 0}, {1, 0}, {0, 3}, {5, 13}, {8, 24}} {
			so, do := off[0], off[1]
			dst := bytes.Repeat([]byte{0xee}, n+do+32)
			got := Copy(dst[do:do+n], src[so:so+n+9]) // src longer: copies len(dst)
			if got != n {
				t.Fatalf("n %d, offsets %v: copied %d", n, off, got)
			}
			if !bytes.Equal(dst[do:do+n], src[so:so+n]) {
				t.Fatalf("n %d, offsets %v: wrong bytes", n, off)
			}
			for i, b := range append(dst[:do:do], dst[do+n:]...) {
				if b != 0xee {
					t.Fatalf("n %d, offsets %v: byte %d outside the destination written", n, off, i)
				}
			}
		}
	}
	if n := Copy(make([]byte, 10), src[:5]); n != 5 {
		t.Fatalf("a shorter source: copied %d, want 5", n)
	}
	t.Logf("REP MOVSB in use: %v", hasRepMovsb)
}

// TestCopyOverlapping holds Copy to copy overlapping ranges as copy does,
// in both directions: REP MOVSB would smear a forward overlap.
func TestCopyOverlapping(t *testing.T) {
	for _, shift := range []int{-4097, -8, -1, 1, 8, 4097} {
		n := 64 << 10
		buf := pattern(n+16384, 3)
		want := append([]byte(nil), buf...)
		so, do := 8192, 8192+shift
		copy(want[do:do+n], want[so:so+n])
		if got := Copy(buf[do:do+n], buf[so:so+n]); got != n {
			t.Fatalf("shift %d: copied %d", shift, got)
		}
		if !bytes.Equal(buf, want) {
			t.Fatalf("shift %d: overlapping copy differs from copy's", shift)
		}
	}
}

// pattern returns n bytes that repeat only every 251*256 (seed shifts
// them), so that a misplaced copy shows.
func pattern(n int, seed uint64) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(uint64(i)%251 + uint64(i)>>8 + seed)
	}
	return p
}

// TestStreamBound: the bound is a quarter of the largest level's data or
// unified cache as sysfs lists it, and streamFloor at least.
func TestStreamBound(t *testing.T) {
	type cache struct{ level, typ, size string }
	for _, c := range []struct {
		name   string
		caches []cache
		want   int
	}{
		{"Intel VM", []cache{{"1", "Data", "48K"}, {"1", "Instruction", "64K"}, {"2", "Unified", "2048K"}, {"3", "Unified", "491520K"}}, 120 << 20},
		{"AMD VM", []cache{{"1", "Data", "32K"}, {"1", "Instruction", "32K"}, {"2", "Unified", "512K"}, {"3", "Unified", "32768K"}}, 8 << 20},
		{"an L3 of 128 MiB", []cache{{"2", "Unified", "1M"}, {"3", "Unified", "128M"}}, 32 << 20},
		{"an instruction cache alone at the top", []cache{{"2", "Unified", "64M"}, {"3", "Instruction", "1024M"}}, 16 << 20},
		{"nothing listed", nil, streamFloor},
		{"unreadable sizes", []cache{{"3", "Unified", "lots"}}, streamFloor},
	} {
		dir := t.TempDir()
		for i, k := range c.caches {
			d := filepath.Join(dir, fmt.Sprintf("index%d", i))
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, v := range map[string]string{"level": k.level, "type": k.typ, "size": k.size} {
				if err := os.WriteFile(filepath.Join(d, name), []byte(v+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := streamBound(lastLevelCache(dir)); got != c.want {
			t.Errorf("%s: streamMin %d, want %d", c.name, got, c.want)
		}
	}
	t.Logf("this host: last-level cache %d bytes, streamMin %d", lastLevelCache(cacheDir), streamMin())
}
