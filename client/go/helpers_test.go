package ringkeeper

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// server is a ringkeeperd of its own (RINGKEEPERD names the binary) on a free loopback port, with
// a temporary database; stopped when the test ends.
type server struct {
	url  string
	proc *exec.Cmd
}

func startServer(t *testing.T) *server {
	t.Helper()
	bin := os.Getenv("RINGKEEPERD")
	if bin == "" {
		t.Skip("RINGKEEPERD is not set")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &server{url: "http://" + addr}
	s.proc = exec.Command(bin, "--listen", addr, "--db", filepath.Join(t.TempDir(), "rk.db"))
	if err := s.proc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	for i := 0; i < 200; i++ { // at most 10 s
		if r, err := http.Get(s.url + "/healthz"); err == nil {
			r.Body.Close()
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("ringkeeperd did not start")
	return nil
}

func (s *server) stop() {
	if s.proc.ProcessState == nil {
		s.proc.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { s.proc.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			s.proc.Process.Kill()
			<-done
		}
	}
}

func (s *server) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var in io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		in = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, s.url+path, in)
	req.Header.Set("Content-Type", "application/json")
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var out map[string]any
	json.NewDecoder(r.Body).Decode(&out)
	return r.StatusCode, out
}

func (s *server) publish(t *testing.T, cluster string, doc map[string]any) {
	t.Helper()
	if status, out := s.call(t, "POST", "/v1/clusters/"+cluster+"/versions?activate=true", doc); status != 201 {
		t.Fatalf("publish: %d %v", status, out)
	}
}

func topology(n int, vnodeFactor int) map[string]any {
	nodes := []map[string]any{}
	for i := 0; i < n; i++ {
		nodes = append(nodes, map[string]any{"id": fmt.Sprintf("n%d", i),
			"addr": fmt.Sprintf("10.0.0.%d:11211", i+1), "weight": 1})
	}
	return map[string]any{"hash": "xxh3_64", "vnode_factor": vnodeFactor, "nodes": nodes}
}

func offline(t *testing.T, doc map[string]any) *Ring {
	t.Helper()
	b, _ := json.Marshal(doc)
	return ringOf(t, b)
}

func keys() [][]byte {
	out := [][]byte{{}, []byte("\u4f1a\u8bdd-7"), []byte("caf\u00e9")}
	for i := 0; i < 500; i++ {
		out = append(out, []byte(fmt.Sprintf("user:%d", i)))
	}
	return out
}

func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}
