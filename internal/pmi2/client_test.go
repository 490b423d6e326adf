package pmi2

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeServer serves the PMI-2 protocol to size tasks as slurmstepd does:
// one PMI-1 init line, then framed commands; kvs-fence answers when every
// task has called it, and publishes the pairs put before.
type fakeServer struct {
	size    int
	mapping string
	refuse  bool // answer init with rc=1

	mu      sync.Mutex
	pending map[string]string // put, not yet fenced
	kvs     map[string]string
	fenced  []chan struct{} // the tasks waiting in the current fence
	log     []string        // every command received, in order
}

func newFakeServer(size int) *fakeServer {
	return &fakeServer{size: size, pending: map[string]string{}, kvs: map[string]string{}}
}

// serve runs task rank's session on conn until finalize or EOF.
func (s *fakeServer) serve(t *testing.T, conn io.ReadWriteCloser, rank int) {
	defer conn.Close()
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return
	}
	if line != "cmd=init pmi_version=2 pmi_subversion=0\n" {
		t.Errorf("init line %q", line)
		return
	}
	rc := 0
	if s.refuse {
		rc = 1
	}
	fmt.Fprintf(conn, "cmd=response_to_init rc=%d pmi_version=2 pmi_subversion=0\n", rc)
	if s.refuse {
		return
	}
	send := func(cmd string, kv ...string) { conn.Write(Encode(cmd, kv...)) }
	for {
		body, err := ReadMessage(r)
		if err != nil {
			return
		}
		m, err := Decode(body)
		if err != nil {
			t.Errorf("server: %v", err)
			return
		}
		s.mu.Lock()
		s.log = append(s.log, m["cmd"])
		s.mu.Unlock()
		switch m["cmd"] {
		case "fullinit":
			if m["pmirank"] != fmt.Sprint(rank) || m["threaded"] != "FALSE" || m["pmijobid"] == "" {
				send("fullinit-response", "rc", "3", "errmsg", "bad fullinit "+body)
				continue
			}
			send("fullinit-response", "rc", "0", "pmi-version", "2", "pmi-subversion", "0",
				"rank", fmt.Sprint(rank), "size", fmt.Sprint(s.size), "appnum", "-1", "debugged", "FALSE", "pmiverbose", "FALSE")
		case "kvs-put":
			s.mu.Lock()
			s.pending[m["key"]] = m["value"]
			s.mu.Unlock()
			send("kvs-put-response", "rc", "0")
		case "kvs-fence":
			ch := make(chan struct{})
			s.mu.Lock()
			s.fenced = append(s.fenced, ch)
			if len(s.fenced) == s.size {
				for k, v := range s.pending {
					s.kvs[k] = v
				}
				clear(s.pending)
				for _, c := range s.fenced {
					close(c)
				}
				s.fenced = nil
			}
			s.mu.Unlock()
			<-ch
			send("kvs-fence-response", "rc", "0")
		case "kvs-get":
			s.mu.Lock()
			v, ok := s.kvs[m["key"]]
			s.mu.Unlock()
			if ok {
				send("kvs-get-response", "rc", "0", "found", "TRUE", "value", v)
			} else {
				send("kvs-get-response", "rc", "0", "found", "FALSE")
			}
		case "info-getjobattr":
			if m["key"] == "PMI_process_mapping" && s.mapping != "" {
				send("info-getjobattr-response", "rc", "0", "found", "TRUE", "value", s.mapping)
			} else {
				send("info-getjobattr-response", "rc", "0", "found", "FALSE")
			}
		case "finalize":
			send("finalize-response", "rc", "0")
			return
		default:
			send(m["cmd"]+"-response", "rc", "14", "errmsg", "unknown command")
		}
	}
}

// socketpair returns both ends of a unix stream socketpair, as slurmstepd
// makes for PMI_FD.
func socketpair(t *testing.T) (task, server *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fds[0]), "task"), os.NewFile(uintptr(fds[1]), "server")
}

// TestExchange: 5 tasks (not a power of two) put their values, fence, and
// each reads every other's and the job attribute; then finalize.
func TestExchange(t *testing.T) {
	const n = 5
	srv := newFakeServer(n)
	srv.mapping = "(vector,(0,2,2),(2,1,1))"
	var wg sync.WaitGroup
	errs := make([]error, n)
	for rank := range n {
		task, server := socketpair(t)
		go srv.serve(t, server, rank)
		wg.Go(func() {
			errs[rank] = func() error {
				c, err := Connect(task, rank, "42")
				if err != nil {
					return err
				}
				if c.Rank() != rank || c.Size() != n {
					return fmt.Errorf("rank %d size %d", c.Rank(), c.Size())
				}
				if err := c.Put(fmt.Sprintf("k%d", rank), fmt.Sprintf("v;%d", rank)); err != nil {
					return err
				}
				if err := c.Fence(); err != nil {
					return err
				}
				for peer := range n {
					v, ok, err := c.Get(fmt.Sprintf("k%d", peer))
					if err != nil || !ok || v != fmt.Sprintf("v;%d", peer) {
						return fmt.Errorf("get k%d: %q %v %v", peer, v, ok, err)
					}
				}
				if _, ok, err := c.Get("missing"); ok || err != nil {
					return fmt.Errorf("get missing: %v %v", ok, err)
				}
				m, ok, err := c.JobAttr("PMI_process_mapping")
				if err != nil || !ok || m != srv.mapping {
					return fmt.Errorf("mapping %q %v %v", m, ok, err)
				}
				return c.Finalize()
			}()
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("exchange hangs")
	}
	for rank, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", rank, err)
		}
	}
}

func TestConnectRefused(t *testing.T) {
	srv := newFakeServer(1)
	srv.refuse = true
	task, server := socketpair(t)
	go srv.serve(t, server, 0)
	_, err := Connect(task, 0, "")
	if err == nil || !strings.Contains(err.Error(), "refuses PMI 2.0") {
		t.Fatalf("refused init: %v", err)
	}
}

func TestServerGone(t *testing.T) {
	task, server := socketpair(t)
	server.Close()
	done := make(chan error, 1)
	go func() { _, err := Connect(task, 0, ""); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("connect to a closed socket succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("connect to a closed socket hangs")
	}
}

// TestErrorAnswer: an rc other than 0 is an *Error naming the command and
// the server's message.
func TestErrorAnswer(t *testing.T) {
	srv := newFakeServer(2)
	task, server := socketpair(t)
	go srv.serve(t, server, 1)
	_, err := Connect(task, 0, "7") // the server expects rank 1
	var pe *Error
	if !errors.As(err, &pe) || pe.Cmd != "fullinit" || pe.RC != 3 || !strings.Contains(pe.Msg, "bad fullinit") {
		t.Fatalf("fullinit as the wrong rank: %v", err)
	}
}

func TestCheckKV(t *testing.T) {
	c := &Client{}
	for _, kv := range [][2]string{{"", "v"}, {strings.Repeat("k", 65), "v"}, {"a;b", "v"}, {"a=b", "v"}, {"k", strings.Repeat("v", 1025)}, {"k", "a\nb"}} {
		if err := c.Put(kv[0], kv[1]); err == nil {
			t.Errorf("Put(%q, %d bytes) accepted", kv[0], len(kv[1]))
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	b := Encode("kvs-put", "key", "a", "value", "x;y;;z", "empty", "")
	if got := string(b[:6]); got != fmt.Sprintf("%-6d", len(b)-6) {
		t.Fatalf("length field %q for %q", got, b)
	}
	m, err := Decode(string(b[6:]))
	if err != nil {
		t.Fatal(err)
	}
	if m["cmd"] != "kvs-put" || m["key"] != "a" || m["value"] != "x;y;;z" || m["empty"] != "" {
		t.Fatalf("decoded %v from %q", m, b)
	}
	// Slurm's own fullinit answer, as its pmi2.c writes it.
	m, err = Decode("cmd=fullinit-response;rc=0;pmi-version=2;pmi-subversion=0;rank=3;size=6;appnum=-1;debugged=FALSE;pmiverbose=FALSE;")
	if err != nil || m["rank"] != "3" || m["size"] != "6" {
		t.Fatalf("fullinit answer: %v %v", m, err)
	}
	for _, bad := range []string{"", "rc=0;cmd=x;", "cmd=x", "cmd=x;rc", "cmd=x;rc=0"} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q) accepted", bad)
		}
	}
	for _, hdr := range []string{"abcdef", "-1    ", "99999 "} {
		if _, err := ReadMessage(strings.NewReader(hdr + "cmd=x;")); err == nil {
			t.Errorf("length %q accepted", hdr)
		}
	}
}

func TestProcessMapping(t *testing.T) {
	for _, tc := range []struct {
		s     string
		size  int
		nodes []int
	}{
		{"(vector,(0,3,2))", 6, []int{0, 0, 1, 1, 2, 2}},
		{"(vector,(0,3,1))", 6, []int{0, 1, 2, 0, 1, 2}},      // cyclic
		{"(vector,(0,2,2),(2,1,1))", 5, []int{0, 0, 1, 1, 2}}, // 2+2+1
		{"(vector,(0,1,1))", 1, []int{0}},
		{"(vector, (0,2,3))", 5, []int{0, 0, 0, 1, 1}}, // uneven last node
	} {
		got, err := ProcessMapping(tc.s, tc.size)
		if err != nil || !slices.Equal(got, tc.nodes) {
			t.Errorf("ProcessMapping(%q, %d) = %v, %v; want %v", tc.s, tc.size, got, err, tc.nodes)
		}
	}
	for _, bad := range []string{"", "(vector)", "(vector,(0,3))", "(vector,(0,0,1))", "(vector,(a,1,1))", "(vector,(0,1,1)", "(hybrid,(0,1,1))"} {
		if _, err := ProcessMapping(bad, 4); err == nil {
			t.Errorf("ProcessMapping(%q) accepted", bad)
		}
	}
	nodes := []int{0, 1, 2, 0, 1, 2}
	if lr, ls := Local(nodes, 4); lr != 1 || ls != 2 {
		t.Errorf("Local(cyclic, 4) = %d/%d, want 1/2", lr, ls)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("cmd=kvs-get-response;rc=0;found=TRUE;value=a;;b;")
	f.Add("cmd=x;;;")
	f.Fuzz(func(t *testing.T, body string) {
		m, err := Decode(body)
		if err == nil && m["cmd"] == "" && !strings.HasPrefix(body, "cmd=;") {
			t.Fatalf("decoded %q without a cmd: %v", body, m)
		}
	})
}

func FuzzProcessMapping(f *testing.F) {
	f.Add("(vector,(0,3,2))", 6)
	f.Fuzz(func(t *testing.T, s string, size int) {
		if size < 1 || size > 4096 {
			return
		}
		nodes, err := ProcessMapping(s, size)
		if err == nil && len(nodes) != size {
			t.Fatalf("%q: %d nodes for %d ranks", s, len(nodes), size)
		}
	})
}
