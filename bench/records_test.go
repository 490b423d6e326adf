package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestRecordDemux feeds the demux rank output split at awkward places:
// records reach the handler, other lines pass through whole and in order.
func TestRecordDemux(t *testing.T) {
	var stream bytes.Buffer
	stream.WriteString("hello from rank 0\n")
	if err := writeRecord(&stream, record{Kind: "start", Coll: "allreduce"}); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(&stream, record{Kind: "row", Row: &Row{Coll: "allreduce", Bytes: 8, InPlace: &Result{Wrong: 0}}}); err != nil {
		t.Fatal(err)
	}
	stream.WriteString("a warning\nno newline at the end")
	for _, chunk := range []int{1, 3, 7, 1000} {
		var out bytes.Buffer
		var got []record
		d := &recordDemux{out: &out, handle: func(r record) error { got = append(got, r); return nil }}
		data := stream.Bytes()
		for len(data) > 0 {
			n := min(chunk, len(data))
			d.Write(data[:n])
			data = data[n:]
		}
		if err := d.Close(); err != nil {
			t.Fatalf("chunk %d: %v", chunk, err)
		}
		if want := "hello from rank 0\na warning\nno newline at the end"; out.String() != want {
			t.Errorf("chunk %d: passed through %q, want %q", chunk, out.String(), want)
		}
		if len(got) != 2 || got[0].Coll != "allreduce" || got[1].Row == nil || got[1].Row.Bytes != 8 || got[1].Row.InPlace == nil {
			t.Errorf("chunk %d: records %+v", chunk, got)
		}
	}
	d := &recordDemux{out: new(bytes.Buffer), handle: func(record) error { return nil }}
	d.Write([]byte(recordMarker + "{not json\n"))
	if err := d.Close(); err == nil || !strings.Contains(err.Error(), "bad record") {
		t.Errorf("a broken record gave %v, want a bad record error", err)
	}
}
