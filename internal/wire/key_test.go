package wire

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestNewKey(t *testing.T) {
	a, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != KeySize || len(b) != KeySize {
		t.Fatalf("key lengths %d, %d, want %d", len(a), len(b), KeySize)
	}
	if bytes.Equal(a, b) {
		t.Fatal("two new keys are equal")
	}
	back, err := ParseKey(EncodeKey(a))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back, a) {
		t.Fatal("ParseKey(EncodeKey(k)) != k")
	}
}

func TestParseKeyErrors(t *testing.T) {
	for _, tc := range []struct{ name, in string }{
		{"empty", ""},
		{"short", strings.Repeat("ab", KeySize-1)},
		{"long", strings.Repeat("ab", KeySize+1)},
		{"odd", strings.Repeat("a", 2*KeySize-1)},
		{"not hex", strings.Repeat("zz", KeySize)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseKey(tc.in)
			if !errors.Is(err, ErrBadKey) {
				t.Fatalf("ParseKey: %v, want ErrBadKey", err)
			}
			if len(tc.in) > 4 && strings.Contains(err.Error(), tc.in[:len(tc.in)-2]) {
				t.Fatalf("error quotes the key text: %v", err)
			}
		})
	}
}

func TestKeyRedacted(t *testing.T) {
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	secretHex := EncodeKey(k)
	type holder struct {
		Name string
		K    Key
	}
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
		out = append(out, fmt.Sprintf(verb, k), fmt.Sprintf(verb, holder{"job", k}), fmt.Sprintf(verb, &holder{"job", k}))
	}
	out = append(out, fmt.Sprint(k), fmt.Sprintln(k))
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("start", "key", k)
	out = append(out, buf.String())
	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("start", "key", k)
	out = append(out, buf.String())
	for _, s := range out {
		if strings.Contains(strings.ToLower(s), secretHex[:16]) || strings.Contains(s, fmt.Sprint([]byte(k))[:12]) {
			t.Fatalf("key leaked: %s", s)
		}
		if !strings.Contains(s, "[redacted]") {
			t.Fatalf("no [redacted] in %q", s)
		}
	}
}
