package shm

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRegion: a region's bytes are found where they lie (wholly in it, not
// beyond), a peer's mapping of it shows what the owner wrote, a reference
// whose descriptor is some other file is refused, and Free forgets it.
func TestRegion(t *testing.T) {
	const size = 3*4096 + 100
	r, err := NewRegion(size)
	if err != nil {
		t.Fatal(err)
	}
	mem := r.Bytes()
	if len(mem) != size {
		t.Fatalf("Bytes: %d bytes, want %d", len(mem), size)
	}
	for i := range mem {
		mem[i] = byte(i*13 + 1)
	}
	if got := RegionAt(mem[:1]); got != r {
		t.Fatalf("RegionAt its start: %v", got)
	}
	if got := RegionAt(mem[1:]); got != nil {
		t.Fatal("RegionAt found a region starting inside one")
	}
	ref, ok := FindRegion(mem[5000:6000])
	if !ok || ref.Offset != 5000 {
		t.Fatalf("FindRegion of bytes 5000-6000: %+v, %v", ref, ok)
	}
	if _, ok := FindRegion(make([]byte, 100)); ok {
		t.Fatal("FindRegion found a Go slice in a region")
	}
	if _, ok := FindRegion(mem[size-1:][:1:1]); !ok {
		t.Fatal("FindRegion missed the region's last byte")
	}
	// Past the end, in the page's tail the region does not show.
	if _, ok := FindRegion(mem[size-10 : size+10]); ok {
		t.Fatal("FindRegion accepted bytes beyond the region")
	}

	peer := NewPeerRegions(os.Getpid())
	defer peer.Close()
	got, err := peer.Payload(ref, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, mem[5000:6000]) {
		t.Fatal("the peer's mapping shows other bytes")
	}
	mem[5000]++ // shared: the peer sees later writes too
	if got[0] != mem[5000] {
		t.Fatal("the peer's mapping is a copy")
	}
	if _, err := peer.Payload(RegionRef{FD: ref.FD, Inode: ref.Inode, Offset: size - 10}, 4096+20); err == nil {
		t.Fatal("a payload beyond the region's file was shown")
	}
	// The descriptor of some other file under the region's inode.
	other, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	fresh := NewPeerRegions(os.Getpid())
	defer fresh.Close()
	if _, err := fresh.Payload(RegionRef{FD: int(other.Fd()), Inode: ref.Inode}, 1); err == nil || !strings.Contains(err.Error(), "not the region") {
		t.Fatalf("another file passed for the region: %v", err)
	}
	if _, err := fresh.Payload(ref, 1); err == nil || fresh.Mapped() != 0 {
		t.Fatalf("a peer whose mapping failed once mapped another (%v)", err)
	}

	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
	if err := r.Free(); err == nil {
		t.Fatal("a region freed twice")
	}
	if _, ok := FindRegion(got); ok {
		t.Fatal("FindRegion found a freed region")
	}
	if got[1] != byte((5001*13+1)&0xff) {
		t.Fatal("the peer's mapping lost the freed region's bytes")
	}
}

// TestPeerRegionsBounded: a peer that maps ever new regions of its owner
// keeps at most peerRegionsMax of them.
func TestPeerRegionsBounded(t *testing.T) {
	peer := NewPeerRegions(os.Getpid())
	defer peer.Close()
	for i := range peerRegionsMax + 5 {
		r, err := NewRegion(4096)
		if err != nil {
			t.Fatal(err)
		}
		r.Bytes()[0] = byte(i)
		ref, _ := FindRegion(r.Bytes())
		got, err := peer.Payload(ref, 1)
		if err != nil || got[0] != byte(i) {
			t.Fatalf("region %d: %v, %v", i, got, err)
		}
		if err := r.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if peer.Mapped() != peerRegionsMax {
		t.Fatalf("%d regions mapped, want %d", peer.Mapped(), peerRegionsMax)
	}
}

// TestPeerRegionsChecksDevice: an inode number is unique only within one
// file system, so a descriptor that names a file elsewhere under the
// region's inode number is refused, not mapped.
func TestPeerRegionsChecksDevice(t *testing.T) {
	other, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var st, dir unix.Stat_t
	if err := unix.Fstat(int(other.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if err := unix.Stat(regionDir, &dir); err != nil {
		t.Fatal(err)
	}
	if st.Dev == dir.Dev {
		t.Skipf("the test binary is on %s's file system", regionDir)
	}
	peer := NewPeerRegions(os.Getpid())
	defer peer.Close()
	// The inode is right for the file the descriptor names; only the
	// device tells it is no region.
	_, err = peer.Payload(RegionRef{FD: int(other.Fd()), Inode: st.Ino}, 1)
	if err == nil || !strings.Contains(err.Error(), "not the region") || peer.Mapped() != 0 {
		t.Fatalf("a file on another device under its own inode: %v, %d mapped", err, peer.Mapped())
	}
	t.Log(err)
}
