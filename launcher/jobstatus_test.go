package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hcclrun/hcclrun/internal/wire"
	"github.com/hcclrun/hcclrun/netio/control"
)

func TestJobStatusFormat(t *testing.T) {
	st := &JobStatus{JobID: "j", Heartbeat: 500 * time.Millisecond, Hosts: []string{"h1", "h1", "h2"}, Ranks: []control.RankStatus{
		{Rank: 0, State: control.Alive, Seq: 9, InCall: true, Where: wire.MakeWhere(1, 2, 1), SilentFor: 100 * time.Millisecond},
		{Rank: 1, State: control.Alive, Seq: 8, InCall: false, SilentFor: 3 * time.Second},
		{Rank: 2, State: control.Lost, Seq: 0},
	}}
	var b bytes.Buffer
	if err := st.Format(&b, func(c uint8) string { return "Coll" + strconv.Itoa(int(c)) }); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, re := range []string{
		`(?m)^0\s+h1\s+alive\s+#9 Coll1 step 2\s+rank 1\s+100ms$`,
		`(?m)^1\s+h1\s+SILENT\s+between calls \(last #8\)\s+-\s+3s$`,
		`(?m)^2\s+h2\s+lost\s+-\s+-\s+0s$`,
		`(?m)^SILENT for more than 2 heartbeats .*: rank 1$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("status lacks %s:\n%s", re, out)
		}
	}
}

// TestStatusSockets: the listing's status sockets of this user, of one
// launcher or all, once each; other users' and other sockets are not.
func TestStatusSockets(t *testing.T) {
	me := statusPrefix()
	other := fmt.Sprintf("@hcclrun-status/%d/", os.Getuid()+1)
	listing := strings.Join([]string{
		"Num       RefCount Protocol Flags    Type St Inode Path",
		"0000000000000000: 00000002 00000000 00010000 0001 01 100 " + me + "10/hccl-a",
		"0000000000000000: 00000003 00000000 00000000 0001 03 101 " + me + "10/hccl-a",
		"0000000000000000: 00000002 00000000 00010000 0001 01 102 " + me + "11/hccl-b",
		"0000000000000000: 00000002 00000000 00010000 0001 01 103 " + other + "10/hccl-c",
		"0000000000000000: 00000002 00000000 00010000 0001 01 104 @hcclrun/job/0/x",
		"0000000000000000: 00000002 00000000 00010000 0001 01 105",
	}, "\n")
	if got := statusSockets(listing, 0); strings.Join(got, " ") != me+"10/hccl-a "+me+"11/hccl-b" {
		t.Errorf("every launcher: %q", got)
	}
	if got := statusSockets(listing, 11); len(got) != 1 || got[0] != me+"11/hccl-b" {
		t.Errorf("launcher 11: %q", got)
	}
}

// TestQueryStatusServes: a status socket of this process is found in
// /proc/net/unix and read; a pid with none says there is no job.
func TestQueryStatusServes(t *testing.T) {
	name := fmt.Sprintf("%s%d/test-%d", statusPrefix(), os.Getpid(), time.Now().UnixNano())
	ln, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if sameUser(c) {
				c.Write([]byte("the table\n"))
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b bytes.Buffer
	if err := QueryStatus(ctx, &b, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if b.String() != "the table\n" {
		t.Errorf("read %q", b.String())
	}
	if err := QueryStatus(ctx, &b, 1<<30); !errors.Is(err, ErrNoJob) {
		t.Errorf("a launcher that does not exist: %v, want ErrNoJob", err)
	}
}
