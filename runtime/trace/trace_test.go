package trace

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/hcclrun/hcclrun/runtime/plan"
	"github.com/hcclrun/hcclrun/runtime/reduce"
)

func TestRingKeepsTheLast(t *testing.T) {
	for _, tc := range []struct{ capacity, added, kept int }{{4, 0, 0}, {4, 3, 3}, {4, 4, 4}, {4, 9, 4}, {1, 5, 1}} {
		r := NewRing(tc.capacity)
		for i := range tc.added {
			r.Add(&Event{Kind: KindOp, Seq: uint64(i)})
		}
		ev, dropped := r.Snapshot()
		if len(ev) != tc.kept || int(dropped) != tc.added-tc.kept {
			t.Fatalf("cap %d, %d added: kept %d, dropped %d", tc.capacity, tc.added, len(ev), dropped)
		}
		for i, e := range ev {
			if want := uint64(tc.added - tc.kept + i); e.Seq != want {
				t.Fatalf("cap %d, %d added: event %d is #%d, want #%d (oldest first)", tc.capacity, tc.added, i, e.Seq, want)
			}
		}
	}
}

// TestRingSlotAndAdd: Slot and Add, interleaved, claim consecutive slots
// and wrap around as Add alone does.
func TestRingSlotAndAdd(t *testing.T) {
	r := NewRing(5)
	for i := range 23 {
		if i%3 == 1 {
			r.Add(&Event{Kind: KindOp, Seq: uint64(i)})
		} else {
			*r.Slot() = Event{Kind: KindCall, Seq: uint64(i)}
		}
	}
	ev, dropped := r.Snapshot()
	if len(ev) != 5 || dropped != 18 {
		t.Fatalf("kept %d, dropped %d, want 5 and 18", len(ev), dropped)
	}
	for i, e := range ev {
		if e.Seq != uint64(18+i) {
			t.Fatalf("event %d is #%d, want #%d", i, e.Seq, 18+i)
		}
	}
}

func BenchmarkRingAdd(b *testing.B) {
	r := NewRing(1 << 16)
	e := Event{Kind: KindCall, Seq: 1}
	for b.Loop() {
		r.Add(&e)
	}
}

func BenchmarkRingSlot(b *testing.B) {
	r := NewRing(1 << 16)
	e := Event{Kind: KindCall, Seq: 1}
	for b.Loop() {
		*r.Slot() = e
	}
}

func TestEventSize(t *testing.T) {
	if n := unsafe.Sizeof(Event{}); n != 56 {
		t.Fatalf("an Event is %d bytes, want 56", n)
	}
}

func TestRingAllocatesNothing(t *testing.T) {
	r := NewRing(8)
	e := Event{Kind: KindCall, Name: r.Name(Names{"ring", "test"})}
	if n := testing.AllocsPerRun(100, func() { r.Add(&e) }); n != 0 {
		t.Fatalf("Add allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { *r.Slot() = Event{Kind: KindPair, Seq: 3} }); n != 0 {
		t.Fatalf("Slot allocates %v times", n)
	}
}

// TestRingOps: a template is numbered once, by its contents; the ring
// keeps a copy.
func TestRingOps(t *testing.T) {
	r := NewRing(4)
	a := []PairOp{{Op: uint8(plan.OpSend), When: AtStart, Peer: 1, Bytes: 8}, {Op: uint8(plan.OpRecv), When: Waited, Peer: 1, Bytes: 8}}
	b := slices.Clone(a)
	b[1].Bytes = 16
	na, nb := r.Ops(a), r.Ops(b)
	a[0].Bytes = 99
	if na != 0 || nb != 1 || r.Ops(b) != 1 {
		t.Fatalf("numbered %d, %d, then %d again, want 0, 1, 1", na, nb, r.Ops(b))
	}
	if got := r.Templates(); len(got) != 2 || got[0][0].Bytes != 8 || got[1][1].Bytes != 16 {
		t.Fatalf("templates %+v", got)
	}
}

// pairEvents is rankFile's AllReduce as the one KindPair event of a
// pair-step call, with its template, in ticks of half a nanosecond.
func pairEvents(rank int) ([]Event, [][]PairOp) {
	peer := int32(1 - rank)
	r := NewRing(4)
	n := r.Ops([]PairOp{
		{Op: uint8(plan.OpSend), When: AtStart, Peer: peer, Bytes: 8},
		{Op: uint8(plan.OpRecvReduce), When: Waited, Peer: peer, Bytes: 8},
		{Op: uint8(plan.OpCopy), When: AtEnd, Step: 1, Peer: -1, Bytes: 8},
	})
	*r.Slot() = Event{Kind: KindPair, Coll: uint8(plan.AllReduce), DType: uint8(reduce.Float32), Peer: n, Name: 1,
		Seq: 1, Bytes: 8, Start: 2000, End: 6000, Extra: 700}
	ev, _ := r.Snapshot()
	return ev, r.Templates()
}

// TestFillPair: a KindPair event becomes the same call and ops in the
// file, and the same timeline once merged, as the four events it stands
// for; its times go through the Line as theirs do.
func TestFillPair(t *testing.T) {
	names := []Names{{"x", "y"}, {"ring", "test"}}
	half := LineThrough(0, 0, 2000, 1000) // ticks of 0.5 ns
	merge := func(files ...*File) []byte {
		m, err := Merge(files)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := m.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	var ops, pairs []*File
	for rank := range 2 {
		peer := int32(1 - rank)
		f := rankFile(rank, 0, 1_000_000, 0)
		f.Fill([]Event{
			{Kind: KindOp, Coll: uint8(plan.AllReduce), Op: uint8(plan.OpSend), Peer: peer, Seq: 1, Bytes: 8, Start: 2000, End: 2000},
			{Kind: KindOp, Coll: uint8(plan.AllReduce), Op: uint8(plan.OpRecvReduce), Peer: peer, Seq: 1, Bytes: 8, Start: 2000, End: 6000, Extra: 4000},
			{Kind: KindOp, Coll: uint8(plan.AllReduce), Op: uint8(plan.OpCopy), Step: 1, Peer: -1, Seq: 1, Bytes: 8, Start: 6000, End: 6000},
			{Kind: KindCall, Coll: uint8(plan.AllReduce), DType: uint8(reduce.Float32), Seq: 1, Bytes: 8, Start: 2000, End: 6000, Name: 1, Extra: 700},
		}, names, nil, half)
		p := rankFile(rank, 0, 1_000_000, 0)
		ev, tmpl := pairEvents(rank)
		p.Fill(ev, names, tmpl, half)
		if !slices.Equal(p.Calls, f.Calls) || !slices.Equal(p.Ops, f.Ops) {
			t.Errorf("rank %d: the pair event filled\n%+v\n%+v\nwant\n%+v\n%+v", rank, p.Calls, p.Ops, f.Calls, f.Ops)
		}
		if p.Calls[0].StartNs != 1000 || p.Ops[1].WaitNs != 2000 || p.Calls[0].PredNs != 700 {
			t.Errorf("rank %d: call %+v, receive %+v: want ticks halved, the prediction in ns kept", rank, p.Calls[0], p.Ops[1])
		}
		ops, pairs = append(ops, f), append(pairs, p)
	}
	if a, b := merge(pairs...), merge(ops...); !bytes.Equal(a, b) {
		t.Errorf("merged pair events\n%s\nwant\n%s", a, b)
	}
}

// rankFile is a rank's file of one AllReduce: a step with a send and a
// receive that waited, and a local reduction.
func rankFile(rank, node int, epoch, offset int64) *File {
	f := &File{Version: Version, JobID: "j", Rank: rank, Size: 2, NodeRank: node, Host: "h" + string(rune('0'+node)),
		Epoch: epoch, Clock: Clock{OffsetNs: offset, ErrorNs: 50}, Written: "close",
		Transports: map[string]string{"0": "tcp", "1": "tcp"}}
	peer := 1 - rank
	f.Fill([]Event{
		{Kind: KindOp, Coll: uint8(plan.AllReduce), Op: uint8(plan.OpSend), Peer: int32(peer), Seq: 1, Bytes: 8, Start: 1000, End: 1100},
		{Kind: KindOp, Coll: uint8(plan.AllReduce), Op: uint8(plan.OpRecvReduce), Peer: int32(peer), Seq: 1, Bytes: 8, Start: 1000, End: 3000, Extra: 1500},
		{Kind: KindOp, Coll: uint8(plan.AllReduce), Op: uint8(plan.OpCopy), Step: 1, Peer: -1, Seq: 1, Bytes: 8, Start: 3100, End: 3200},
		{Kind: KindCall, Coll: uint8(plan.AllReduce), DType: uint8(reduce.Float32), Seq: 1, Bytes: 8, Start: 900, End: 3300, Name: 1},
	}, []Names{{"x", "y"}, {"ring", "test"}}, nil, Line{})
	return f
}

func TestWriteReadMerge(t *testing.T) {
	dir := t.TempDir()
	// Rank 1's clock is 10 us behind the launcher's and its epoch 5 us
	// later: its events land 15 us after rank 0's.
	for _, f := range []*File{rankFile(0, 0, 1_000_000, 0), rankFile(1, 1, 1_005_000, 10_000)} {
		if err := WriteFile(dir, f); err != nil {
			t.Fatal(err)
		}
	}
	files, err := ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Rank != 0 || files[1].Ops[1].Op != "RecvReduce" || files[1].Calls[0].DType != "float32" {
		t.Fatalf("read back %+v", files)
	}
	merged, err := Merge(files)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := merged.Write(&buf); err != nil {
		t.Fatal(err)
	}
	var got struct {
		TraceEvents []struct {
			Name, Cat, Ph string
			Ts, Dur       float64
			Pid, Tid      int
			Args          map[string]any
		}
		Metadata struct{ Clocks []RankClock }
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	calls := map[int]float64{}
	names := map[[2]int]string{}
	for _, e := range got.TraceEvents {
		switch {
		case e.Ph == "M" && e.Name == "thread_name":
			names[[2]int{e.Pid, e.Tid}] = e.Args["name"].(string)
		case e.Cat == "call":
			calls[e.Tid-1] = e.Ts
			if e.Dur != 2.4 || e.Args["algo"] != "ring" || e.Args["dtype"] != "float32" {
				t.Errorf("call %+v", e)
			}
		case e.Cat == "wait":
			if e.Name != "wait rank "+string(rune('0'+2-e.Tid)) || e.Dur != 1.5 {
				t.Errorf("wait %+v", e)
			}
		}
	}
	if names[[2]int{1, 1}] != "rank 0" || names[[2]int{2, 2}] != "rank 1" {
		t.Errorf("tracks %v: want rank 0 in process 1 (host 0), rank 1 in process 2", names)
	}
	if calls[0] != 0 || calls[1] != 15 {
		t.Errorf("calls start at %v us, want rank 0 at 0 and rank 1 at 15 (epoch and clock offset)", calls)
	}
	if len(got.Metadata.Clocks) != 2 || got.Metadata.Clocks[1].OffsetNs != 10_000 {
		t.Errorf("clocks %+v", got.Metadata.Clocks)
	}
}

func TestMergeRefusesTwoJobs(t *testing.T) {
	a, b := rankFile(0, 0, 0, 0), rankFile(1, 0, 0, 0)
	b.JobID = "other"
	if _, err := Merge([]*File{a, b}); err == nil {
		t.Fatal("merged the files of two jobs")
	}
}

func TestReadDirRefusesDuplicates(t *testing.T) {
	dir := t.TempDir()
	WriteFile(dir, rankFile(0, 0, 0, 0))
	f := rankFile(0, 0, 0, 0)
	b, _ := json.Marshal(f)
	if err := writeBytes(filepath.Join(dir, "rank-00.json"), b); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadDir(dir); err == nil {
		t.Fatal("two files of rank 0 read")
	}
}

func TestReport(t *testing.T) {
	tallies := []*Tally{NewTally(), NewTally(), NewTally()}
	for rank, tl := range tallies {
		for i := range 4 {
			tl.Add(uint8(plan.AllReduce), 8, time.Duration(10*(rank+1))*time.Microsecond, "oneshot")
			tl.Add(uint8(plan.AllReduce), 1<<20, time.Millisecond, []string{"ring", "rhd"}[i%2])
		}
		tl.Add(uint8(plan.Broadcast), 0, time.Microsecond, "ring")
	}
	var sums []Summary
	for rank, tl := range tallies[:2] { // rank 2 sends nothing
		sums = append(sums, tl.Summary(rank))
	}
	r := MakeReport(3, sums)
	if len(r.Missing) != 1 || r.Missing[0] != 2 {
		t.Errorf("missing %v, want [2]", r.Missing)
	}
	if len(r.Rows) != 3 {
		t.Fatalf("rows %+v", r.Rows)
	}
	small := r.Rows[0]
	if small.Coll != "AllReduce" || small.Class != "<=256 B" || small.Calls != 4 || small.Bytes != 32 ||
		small.MeanNs != 15_000 || small.SlowestRank != 1 || small.SlowestMeanNs != 20_000 || small.Algos["oneshot"] != 8 {
		t.Errorf("small AllReduces: %+v", small)
	}
	if big := r.Rows[1]; big.Class != "<=1 MiB" || big.Algos["ring"] != 4 || big.Algos["rhd"] != 4 || big.TotalNs != 4_000_000 {
		t.Errorf("large AllReduces: %+v", big)
	}
	if r.Rows[2].Coll != "Broadcast" || r.Rows[2].Class != "0 B" {
		t.Errorf("third row %+v", r.Rows[2])
	}
	var buf bytes.Buffer
	if err := r.Print(&buf); err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", buf.String())
}

func TestSizeClass(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1: "<=256 B", 256: "<=256 B", 257: "<=4 KiB", 1 << 20: "<=1 MiB", 1<<20 + 1: "<=16 MiB", 1 << 30: ">256 MiB"} {
		if got := SizeClass(n); got != want {
			t.Errorf("SizeClass(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestWriteHTML: the drawing is one SVG that encoding/xml reads, with a
// lane label per rank and a box per call, step and wait of the window.
func TestWriteHTML(t *testing.T) {
	merged, err := Merge([]*File{rankFile(0, 0, 1_000_000, 0), rankFile(1, 1, 1_005_000, 10_000)})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := merged.WriteHTML(&buf, 1200, 0, 0); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	svg := page[strings.Index(page, "<svg") : strings.Index(page, "</svg>")+len("</svg>")]
	var doc struct {
		Rects []struct {
			Title string `xml:"title"`
		} `xml:"rect"`
		Texts []string `xml:"text"`
	}
	if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
		t.Fatalf("the SVG does not parse: %v", err)
	}
	boxes := 0
	for _, r := range doc.Rects {
		if r.Title != "" {
			boxes++
		}
	}
	// Per rank: a call, two steps, a wait.
	if boxes != 8 {
		t.Errorf("%d boxes, want 8", boxes)
	}
	if !slices.Contains(doc.Texts, "rank 0") || !slices.Contains(doc.Texts, "rank 1") {
		t.Errorf("lane labels missing: %q", doc.Texts)
	}
}
