package placement

import (
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestReadHostfile(t *testing.T) {
	tests := []struct {
		file string
		want []Host
	}{
		{"openmpi.hostfile", []Host{
			{Name: "aa", Slots: 3, MaxSlots: 4},
			{Name: "bb", User: "alice", Slots: 4},
			{Name: "cc", Slots: 1},
			{Name: "node01", Slots: 2},
			{Name: "node02", Slots: 2},
			{Name: "node03", Slots: 2},
			{Name: "10.77.0.1", Slots: 8},
			{Name: "fd00::5", Slots: 2},
		}},
		{"mpich.hostfile", []Host{
			{Name: "mpich1", Slots: 4},
			{Name: "mpich2", Slots: 1},
			{Name: "mpich3", User: "bob", Slots: 2},
		}},
	}
	for _, tt := range tests {
		got, err := ReadHostfile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.file, got, tt.want)
		}
	}
	if _, err := ReadHostfile(filepath.Join("testdata", "missing")); err == nil {
		t.Error("ReadHostfile of a missing file succeeded")
	}
}

func TestParseHostfile(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Host
	}{
		{"spaced equals", "h slots =3 max_slots= 5\n", []Host{{Name: "h", Slots: 3, MaxSlots: 5}}},
		{"aliases", "h cpu=2 slots-max=4\ng count=2 username=joe\n",
			[]Host{{Name: "h", Slots: 2, MaxSlots: 4}, {Name: "g", User: "joe", Slots: 2}}},
		{"case", "h SLOTS=2\n", []Host{{Name: "h", Slots: 2}}},
		{"repeat without slots", "h\nh\n", []Host{{Name: "h", Slots: 2}}},
		{"repeat keeps user", "joe@h\nh slots=2\n", []Host{{Name: "h", User: "joe", Slots: 3}}},
		{"later max replaces", "h max_slots=2\nh slots=2 max_slots=5\n", []Host{{Name: "h", Slots: 3, MaxSlots: 5}}},
		{"comment only and no newline", "# x\n\n   \t\nh:2 # c", []Host{{Name: "h", Slots: 2}}},
		{"list on a line", "a,b[1-2] slots=2", []Host{{Name: "a", Slots: 2}, {Name: "b1", Slots: 2}, {Name: "b2", Slots: 2}}},
		{"mpich hostlist", "n[1-2]:3", []Host{{Name: "n1", Slots: 3}, {Name: "n2", Slots: 3}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHostfile("hf", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseHostfileErrors(t *testing.T) {
	tests := []struct {
		name, in string
		line     int
		token    string
		msg      string
	}{
		{"bad slots", "a\nb slots=x\n", 2, "slots=x", `slot count "x" is not a decimal number`},
		{"zero slots", "b slots=0", 1, "slots=0", "slot count must be at least 1"},
		{"unknown attr", "a\n\n# c\nb ports=2\n", 4, "ports=2", `unknown attribute "ports"`},
		{"no value", "b slots", 1, "slots", "want attribute=value"},
		{"attribute first", "slots=2 b", 1, "slots=2", "starts with a host name"},
		{"twice", "b slots=1 slots=2", 1, "slots=2", "slot count given twice"},
		{"mpich and slots", "b:2 slots=2", 1, "slots=2", "slot count given twice"},
		{"bad mpich", "b:x", 1, "b:x", `slot count "x" is not a decimal number`},
		{"over max", "b slots=4 max_slots=2", 1, "b", "has 4 slots, more than its max_slots=2"},
		{"merge over max", "b slots=2 max_slots=2\nb\n", 2, "b", "has 3 slots, more than its max_slots=2"},
		{"user clash", "x@b\ny@b\n", 2, "y@b", `given before with user "x", now with "y"`},
		{"user attr clash", "x@b user=y", 1, "user=y", "user given twice"},
		{"empty user", "@b", 1, "@b", "empty user"},
		{"empty host", "u@", 1, "u@", "empty host"},
		{"dash host", "-oProxyCommand=x", 1, "-oProxyCommand=x", "starts with a host name"},
		{"dash host 2", "-evil slots=1", 1, "-evil", `starts with "-"`},
		{"bad char", "a/b", 1, "a/b", `has the character '/'`},
		{"counts in a list", "a:1,b:2", 1, "a:1,b:2", `host name "a:1" has a colon but is not an IPv6 address`},
		{"colons not ipv6", "a:b:c", 1, "a:b:c", `host name "a:b:c" has a colon but is not an IPv6 address`},
		{"bad hostlist", "n[1-", 1, "n[1-", `unclosed "["`},
		{"bad hostlist range", "n[2-1] slots=2", 1, "n[2-1]", "decreasing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHostfile("hosts.txt", []byte(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *SyntaxError", err)
			}
			if se.Source != "hosts.txt" || se.Line != tt.line || se.Token != tt.token {
				t.Errorf("error at %s:%d token %q, want hosts.txt:%d token %q", se.Source, se.Line, se.Token, tt.line, tt.token)
			}
			prefix := "hosts.txt:" + strconv.Itoa(tt.line) + ": "
			if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q: want prefix %q and %q", err, prefix, tt.msg)
			}
		})
	}
	if _, err := ParseHostfile("empty", []byte("# nothing\n")); err == nil || !strings.Contains(err.Error(), "empty: no hosts") {
		t.Errorf("empty hostfile: err = %v", err)
	}
}

// TestHostfileErrorsQuoteLittle: a huge line's error quotes at most
// maxQuoted bytes of each token it names (it once quoted a 10 MB line
// twice), and a hostfile beyond MaxHostfileBytes is refused without
// being read to its end.
func TestHostfileErrorsQuoteLittle(t *testing.T) {
	huge := strings.Repeat("a", 10<<20)
	for _, in := range []string{
		huge + "!",         // bad host name
		"n slots=" + huge,  // bad count
		"n " + huge + "=1", // unknown attribute
		"n[" + strings.Repeat("1", 1<<20) + "-2]", // bad range
		"n:" + strings.Repeat("9", 1<<20),         // MPICH count
		"é" + strings.Repeat("é", 1<<20) + "!",    // no rune is split
	} {
		_, err := ParseHostfile("hf", []byte(in))
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "...") || !utf8.ValidString(err.Error()) {
			t.Errorf("error of %d bytes: %.300q", len(err.Error()), err)
		}
	}
	if _, err := ReadHostfile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "/dev/zero: more than the 16 MiB a hostfile may have") {
		t.Errorf("ReadHostfile(/dev/zero): %v", err)
	}
}
