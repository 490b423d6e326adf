package plan

import "testing"

func TestLayout(t *testing.T) {
	tests := []struct {
		labels     []int
		servers    int
		largest    int
		even, cont bool
		str        string
		members    [][]int
	}{
		{[]int{0, 0, 1}, 2, 2, false, true, "2+1", [][]int{{0, 1}, {2}}},
		{[]int{5, 5, 5, 2, 2, 9}, 3, 3, false, true, "3+2+1", [][]int{{0, 1, 2}, {3, 4}, {5}}},
		{[]int{7, 3, 7, 3}, 2, 2, true, false, "2+2 [0 2] [1 3]", [][]int{{0, 2}, {1, 3}}},
		{[]int{0, 1, 2, 0, 1, 0}, 3, 3, false, false, "3+2+1 [0 3 5] [1 4] [2]", [][]int{{0, 3, 5}, {1, 4}, {2}}},
	}
	for _, tt := range tests {
		l, err := NewLayout(tt.labels)
		if err != nil {
			t.Fatal(err)
		}
		if l.Servers() != tt.servers || l.Largest() != tt.largest || l.Even() != tt.even || l.Contiguous() != tt.cont || l.String() != tt.str {
			t.Errorf("%v: %d servers, largest %d, even %v, contiguous %v, %q; want %d, %d, %v, %v, %q",
				tt.labels, l.Servers(), l.Largest(), l.Even(), l.Contiguous(), l, tt.servers, tt.largest, tt.even, tt.cont, tt.str)
		}
		for g, m := range tt.members {
			got := l.Members(g)
			if len(got) != len(m) {
				t.Fatalf("%v: server %d holds %v, want %v", tt.labels, g, got, m)
			}
			for i, r := range m {
				if got[i] != r || l.Server(r) != g || l.Local(r) != i {
					t.Errorf("%v: server %d holds %v, want %v (rank %d: server %d local %d)", tt.labels, g, got, m, r, l.Server(r), l.Local(r))
				}
			}
		}
	}
	if l, err := NewLayout([]int{4, 4, 4}); l != nil || err != nil {
		t.Errorf("one server: %v, %v; want the nil layout", l, err)
	}
	if _, err := NewLayout([]int{0, -1}); err == nil {
		t.Error("a negative server label was accepted")
	}
	var one *Layout
	if one.Servers() != 1 || !one.Even() || !one.Contiguous() || one.String() != "1 server" || one.Server(3) != 0 || one.Local(3) != 3 {
		t.Error("the nil layout is not one server")
	}
	if l := EvenLayout(6, 2); l.Servers() != 3 || !l.Even() {
		t.Errorf("EvenLayout(6, 2) = %s", l)
	}
	if EvenLayout(6, 6) != nil || EvenLayout(6, 0) != nil || SizesLayout(4) != nil {
		t.Error("a layout of one server is not nil")
	}
}
