package ranktable

import (
	"slices"
	"strings"
	"testing"
)

func TestCPUList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		format  string // FormatCPUList(want)
		wantErr string
	}{
		{in: "0", want: []int{0}, format: "0"},
		{in: "0-3,8,10-11", want: []int{0, 1, 2, 3, 8, 10, 11}, format: "0-3,8,10-11"},
		{in: "5,1-2,2", want: []int{1, 2, 5}, format: "1-2,5"},
		{in: "7-7", want: []int{7}, format: "7"},
		{in: "", wantErr: "empty"},
		{in: "1,", wantErr: `cpu "" in "" is empty`},
		{in: "3-1", wantErr: "decreasing"},
		{in: "0-7:2/4", wantErr: "not a decimal"},
		{in: "0-8192", wantErr: "exceeds 8191"},
		{in: "1-2-3", wantErr: "not a decimal"},
	}
	for _, tt := range tests {
		got, err := ParseCPUList(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseCPUList(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if f := FormatCPUList(got); f != tt.format {
			t.Errorf("FormatCPUList(%v) = %q, want %q", got, f, tt.format)
		}
	}
	if f := FormatCPUList(nil); f != "" {
		t.Errorf("FormatCPUList(nil) = %q", f)
	}
	d := Device{CPUList: "2-3"}
	if c, err := d.CPUs(); err != nil || !slices.Equal(c, []int{2, 3}) {
		t.Errorf("Device.CPUs = %v, %v", c, err)
	}
	if c, err := (&Device{}).CPUs(); c != nil || err != nil {
		t.Errorf("Device.CPUs without a list = %v, %v", c, err)
	}
}
