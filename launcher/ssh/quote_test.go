package ssh

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestQuote(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain", "plain"},
		{"/usr/bin/x-y_z.1", "/usr/bin/x-y_z.1"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{`"dq"`, `'"dq"'`},
		{"$HOME", "'$HOME'"},
		{"A=b", "'A=b'"},
		{"~", "'~'"},
		{"a\nb", "'a\nb'"},
		{"*", "'*'"},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestQuoteShell hands quoted arguments to real shells, as sshd does with the command
// line, and checks that each argument arrives unchanged.
func TestQuoteShell(t *testing.T) {
	args := []string{"", "a b", "it's", `"double" and 'single'`, "$(echo no)", "`no`", "\\", "a\nb", "*", "~", "A=b", "é ü", "-n", ";|&<>(){}[]!#"}
	for _, sh := range []string{"sh", "bash", "dash"} {
		path, err := exec.LookPath(sh)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		line := `printf '%s\0' ` + QuoteCommand(args)
		out, err := exec.CommandContext(ctx, path, "-c", line).Output()
		cancel()
		if err != nil {
			t.Fatalf("%s -c %q: %v", sh, line, err)
		}
		got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		if len(got) != len(args) {
			t.Fatalf("%s: got %d args %q, want %d", sh, len(got), got, len(args))
		}
		for i := range args {
			if got[i] != args[i] {
				t.Errorf("%s: arg %d = %q, want %q", sh, i, got[i], args[i])
			}
		}
	}
}

// unquote is a POSIX shell word splitter restricted to what Quote produces (bare safe
// words and single-quoted strings), for the fuzz test.
func unquote(line string) ([]string, bool) {
	var words []string
	var cur strings.Builder
	inWord, inQuote := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inQuote && c == '\'':
			inQuote = false
		case inQuote:
			cur.WriteByte(c)
		case c == '\'':
			inQuote, inWord = true, true
		case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
			cur.WriteByte('\'')
			i++
			inWord = true
		case c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case isSafe(c):
			cur.WriteByte(c)
			inWord = true
		default:
			return nil, false
		}
	}
	if inQuote {
		return nil, false
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}

func FuzzQuote(f *testing.F) {
	f.Add("a b", "it's")
	f.Add("", "$x")
	f.Fuzz(func(t *testing.T, a, b string) {
		got, ok := unquote(QuoteCommand([]string{a, b}))
		if !ok || len(got) != 2 || got[0] != a || got[1] != b {
			t.Fatalf("QuoteCommand(%q, %q) = %q, unquotes to %q (ok %v)", a, b, QuoteCommand([]string{a, b}), got, ok)
		}
	})
}
