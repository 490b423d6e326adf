package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/launcher"
)

// parse runs the command line through the real App with a launch function
// that records the Job instead of running it.
func parse(t *testing.T, args ...string) (*launcher.Job, string, error) {
	t.Helper()
	var job *launcher.Job
	var out, errOut bytes.Buffer
	app := newApp(stdio{strings.NewReader(""), &out, &errOut}, func(_ context.Context, j *launcher.Job, _ stdio) error {
		job = j
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := app.RunContext(ctx, append([]string{"hcclrun"}, args...))
	return job, out.String() + errOut.String(), err
}

func TestFlagParsing(t *testing.T) {
	type want struct {
		program   string
		args      []string
		np        int
		export    []string
		tag       bool
		timeout   time.Duration
		grace     time.Duration
		abortWait time.Duration
		bind      launcher.BindPolicy
	}
	def := func(w want) want {
		if w.args == nil {
			w.args = []string{}
		}
		if w.grace == 0 {
			w.grace = launcher.DefaultGrace
		}
		return w
	}
	tests := []struct {
		name string
		args []string
		want want
	}{
		{"np", []string{"-np", "4", "./prog"}, want{program: "./prog", np: 4}},
		{"n", []string{"-n", "3", "./prog"}, want{program: "./prog", np: 3}},
		{"--np=", []string{"--np=2", "./prog"}, want{program: "./prog", np: 2}},
		{"-np=", []string{"-np=5", "prog"}, want{program: "prog", np: 5}},
		{"default np is one per CPU", []string{"./prog"}, want{program: "./prog", np: goruntime.NumCPU()}},
		{"args pass through", []string{"-np", "2", "./train", "--lr", "0.1", "-n", "3"},
			want{program: "./train", np: 2, args: []string{"--lr", "0.1", "-n", "3"}}},
		{"flags of ours after the program are the program's", []string{"-np", "2", "./p", "-np", "9", "--tag-output", "-x", "A=1", "--", "--help"},
			want{program: "./p", np: 2, args: []string{"-np", "9", "--tag-output", "-x", "A=1", "--", "--help"}}},
		{"-- ends our flags", []string{"-np", "2", "--", "-weird-name", "a"}, want{program: "-weird-name", np: 2, args: []string{"a"}}},
		{"empty and spaced args", []string{"-n", "1", "p", "", "a b", "  "}, want{program: "p", np: 1, args: []string{"", "a b", "  "}}},
		{"-x repeatable, commas kept", []string{"-x", "A=1,2", "-x", "PATH", "--x=B=", "-np", "1", "p"},
			want{program: "p", np: 1, export: []string{"A=1,2", "PATH", "B="}}},
		{"tag-output", []string{"--tag-output", "-np", "2", "p"}, want{program: "p", np: 2, tag: true}},
		{"single-dash tag-output", []string{"-tag-output", "-np", "2", "p"}, want{program: "p", np: 2, tag: true}},
		{"timeout duration", []string{"--timeout", "1m30s", "-np", "1", "p"}, want{program: "p", np: 1, timeout: 90 * time.Second}},
		{"timeout seconds", []string{"--timeout", "10", "-np", "1", "p"}, want{program: "p", np: 1, timeout: 10 * time.Second}},
		{"timeout fractional seconds", []string{"--timeout=2.5", "-np", "1", "p"}, want{program: "p", np: 1, timeout: 2500 * time.Millisecond}},
		{"grace", []string{"--grace", "200ms", "-np", "1", "p"}, want{program: "p", np: 1, grace: 200 * time.Millisecond}},
		{"grace 0 kills at once", []string{"--grace", "0", "-np", "1", "p"}, want{program: "p", np: 1, grace: time.Nanosecond}},
		{"grace in seconds", []string{"--grace", "1", "-np", "1", "p"}, want{program: "p", np: 1, grace: time.Second}},
		{"hidden abort-wait", []string{"--abort-wait", "300ms", "-np", "1", "p"}, want{program: "p", np: 1, abortWait: 300 * time.Millisecond}},
		{"last -np wins", []string{"-np", "2", "-np", "3", "p"}, want{program: "p", np: 3}},
		{"bind-to none", []string{"--bind-to", "none", "-np", "2", "p"}, want{program: "p", np: 2, bind: launcher.BindNone}},
		{"bind-to core", []string{"--bind-to=core", "-np", "2", "p"}, want{program: "p", np: 2, bind: launcher.BindCore}},
		{"bind-to hwthread is core", []string{"-bind-to", "hwthread", "-np", "2", "p"}, want{program: "p", np: 2, bind: launcher.BindCore}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, out, err := parse(t, tt.args...)
			if err != nil {
				t.Fatalf("parse %q: %v\n%s", tt.args, err, out)
			}
			w := def(tt.want)
			got := want{job.Program, job.Args, job.NP, job.Export, job.TagOutput, job.Timeout, job.Grace, job.AbortWait, job.Bind}
			if got.args == nil {
				got.args = []string{}
			}
			if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", w) {
				t.Fatalf("parse %q:\n got %#v\nwant %#v", tt.args, got, w)
			}
			if job.Stdin == nil || job.Stdout == nil || job.Stderr == nil || job.Logger == nil {
				t.Fatalf("stdio or logger not wired")
			}
		})
	}
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		msg  string
	}{
		{"no program", []string{"-np", "2"}, "missing program"},
		{"nothing", nil, "missing program"},
		{"np zero", []string{"-np", "0", "p"}, "-np must be at least 1, got 0"},
		{"np negative", []string{"-np", "-2", "p"}, "-np must be at least 1, got -2"},
		{"np not a number", []string{"-np", "four", "p"}, `invalid value "four" for flag -np`},
		{"np without value", []string{"-np"}, "flag needs an argument: -np"},
		{"unknown flag", []string{"--bogus", "p"}, "flag provided but not defined: -bogus"},
		{"bad timeout", []string{"--timeout", "soon", "p"}, `"soon" is not a duration`},
		{"negative grace", []string{"--grace", "-1s", "p"}, `"-1s" is negative`},
		{"x without value", []string{"-x"}, "flag needs an argument: -x"},
		{"bad bind-to", []string{"--bind-to", "socket", "p"}, `--bind-to "socket": want auto, none or core`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job, out, err := parse(t, tt.args...)
			if err == nil {
				t.Fatalf("parse %q: no error, job %+v", tt.args, job)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("parse %q: %v, want %q", tt.args, err, tt.msg)
			}
			if !errors.Is(err, launcher.ErrUsage) || launcher.ExitCode(err) != 2 {
				t.Fatalf("parse %q: %v is not a usage error (exit code %d)", tt.args, err, launcher.ExitCode(err))
			}
			if job != nil {
				t.Fatalf("launched despite the error")
			}
			if out != "" {
				t.Fatalf("printed %q: run prints the one error line", out)
			}
		})
	}
}

func TestHelpAndVersion(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"hcclrun [options] PROGRAM [ARGS...]", "Examples:", "hcclrun -np 4 ./train", "--tag-output", "--timeout", "--grace", "ranktable"}},
		{[]string{"-h"}, []string{"Examples:"}},
		{[]string{"--version"}, []string{"hcclrun ", goruntime.Version()}},
		{[]string{"-V"}, []string{"hcclrun "}},
		{[]string{"ranktable", "--help"}, []string{"--check FILE", "-np N"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			job, out, err := parse(t, tt.args...)
			if err != nil || job != nil {
				t.Fatalf("parse %q: %v, job %v", tt.args, err, job)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "abort-wait") {
				t.Errorf("hidden flag shown")
			}
		})
	}
}
