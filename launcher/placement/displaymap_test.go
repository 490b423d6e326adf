package placement

import (
	"errors"
	"strings"
	"testing"
)

func TestDisplayMap(t *testing.T) {
	tests := []struct {
		name  string
		hosts []Host
		opts  Options
		want  string
	}{
		{"map-by node", []Host{{Name: "a", Slots: 2, MaxSlots: 4}, {Name: "b", Slots: 2}}, Options{NP: 3, MapBy: MapByNode}, `
 ========================   JOB MAP   ========================
 Mapping: 3 ranks on 2 hosts, map-by node: rank counts dealt round robin, ranks numbered contiguously per host (as --rank-by slot; the rank table needs each host's ranks contiguous)

 Data for node: a	Num slots: 2	Max slots: 4	Num procs: 2
 	Process rank: 0	Local rank: 0
 	Process rank: 1	Local rank: 1

 Data for node: b	Num slots: 2	Max slots: none	Num procs: 1
 	Process rank: 2	Local rank: 0

 =============================================================
`},
		{"oversubscribed slot", []Host{{Name: "localhost", Slots: 1}}, Options{NP: 2, Oversubscribe: true}, `
 ========================   JOB MAP   ========================
 Mapping: 2 ranks on 1 hosts, map-by slot: each host's slots filled in turn

 Data for node: localhost	Num slots: 1	Max slots: none	Num procs: 2 (oversubscribed)
 	Process rank: 0	Local rank: 0
 	Process rank: 1	Local rank: 1

 =============================================================
`},
		{"pernode", []Host{{Name: "a", Slots: 4}, {Name: "b", Slots: 4}}, Options{PerNode: 1}, `
 ========================   JOB MAP   ========================
 Mapping: 2 ranks on 2 hosts, -N 1 (1 ranks per host, numbered host by host)

 Data for node: a	Num slots: 4	Max slots: none	Num procs: 1
 	Process rank: 0	Local rank: 0

 Data for node: b	Num slots: 4	Max slots: none	Num procs: 1
 	Process rank: 1	Local rank: 0

 =============================================================
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Map(tt.hosts, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := p.DisplayMap(&b); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want[1:] {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want[1:])
			}
		})
	}
}

type failWriter struct{}

var errWrite = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestDisplayMapWriteError(t *testing.T) {
	p, err := Map([]Host{{Name: "a", Slots: 1}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.DisplayMap(failWriter{}); !errors.Is(err, errWrite) {
		t.Fatalf("DisplayMap to a failing writer: %v", err)
	}
}
