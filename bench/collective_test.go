package bench

import (
	"slices"
	"testing"
)

func TestBusFactor(t *testing.T) {
	tests := []struct {
		coll Coll
		n    int
		want float64
	}{
		{AllReduce, 1, 0}, {AllReduce, 2, 1}, {AllReduce, 4, 1.5}, {AllReduce, 8, 1.75},
		{AllGather, 2, 0.5}, {AllGather, 4, 0.75},
		{ReduceScatter, 2, 0.5}, {ReduceScatter, 8, 0.875},
		{AlltoAll, 2, 0.5}, {AlltoAll, 4, 0.75},
		{AlltoAllV, 2, 0.5}, {AlltoAllV, 3, 2.0 / 3},
		{Broadcast, 1, 1}, {Broadcast, 2, 1}, {Broadcast, 8, 1},
		{Reduce, 2, 1}, {Reduce, 8, 1},
	}
	for _, tt := range tests {
		if got := tt.coll.BusFactor(tt.n); got != tt.want {
			t.Errorf("%v.BusFactor(%d) = %v, want %v", tt.coll, tt.n, got, tt.want)
		}
	}
}

func TestParseColls(t *testing.T) {
	tests := []struct {
		in      string
		want    []Coll
		wantErr bool
	}{
		{in: "allreduce", want: []Coll{AllReduce}},
		{in: "ALL", want: []Coll{AllReduce, AllGather, ReduceScatter, AlltoAll, AlltoAllV, Broadcast, Reduce}},
		{in: "broadcast, reduce,broadcast", want: []Coll{Broadcast, Reduce}},
		{in: "alltoallv", want: []Coll{AlltoAllV}},
		{in: "allreduc", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseColls(tt.in)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("ParseColls(%q) = %v, %v; want %v (error %v)", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
