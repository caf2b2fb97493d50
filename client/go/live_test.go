package ringkeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The binding against a real ringkeeperd: fetch, each refusal, the last-known-good file, a long
// poll, the migration window, the fleet report, lookups on goroutines while the ring changes.

func TestFetchAndLookup(t *testing.T) {
	s := startServer(t)
	doc := topology(5, 40)
	s.publish(t, "c", doc)
	ring := offline(t, doc)
	c, err := New(context.Background(), Options{Server: s.url, Cluster: "c", ExpectHash: "xxh3_64",
		ExpectVnodeFactor: 40, ClientID: "go-1", NoRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Version() != 1 || c.PreviousVersion() != 0 || c.Fingerprint() != ring.Fingerprint() {
		t.Fatalf("v%d prev %d %s", c.Version(), c.PreviousVersion(), c.Fingerprint())
	}
	for _, k := range keys() {
		got, err := c.Lookup(k)
		if err != nil || got != ring.Lookup(k) {
			t.Fatalf("%q: %s %v, want %s", k, got, err, ring.Lookup(k))
		}
		if s, _ := c.LookupString(string(k)); s != got {
			t.Fatalf("%q: string and bytes differ", k)
		}
	}
	many, err := c.LookupMany(keys())
	for i, k := range keys() {
		if err != nil || many[i] != ring.Lookup(k) {
			t.Fatalf("LookupMany %q: %v %v", k, many[i], err)
		}
	}
	reps, _ := c.LookupReplicas([]byte("user:1"), 3)
	want, _ := ring.LookupReplicas([]byte("user:1"), 3)
	if fmt.Sprint(reps) != fmt.Sprint(want) {
		t.Fatalf("replicas %v, want %v", reps, want)
	}
	if owner, prev, _ := c.Owners([]byte("user:1")); owner != ring.Lookup([]byte("user:1")) || prev != "" {
		t.Fatalf("owners %s %q", owner, prev)
	}
	if st := c.Status(); st.Accepted != 1 || st.FromCache {
		t.Fatalf("status %+v", st)
	}
	c.Close()
	if _, err := c.Lookup([]byte("k")); !errors.Is(err, ErrNoRing) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestRefused(t *testing.T) {
	s := startServer(t)
	s.publish(t, "c", topology(3, 40))
	cases := []struct {
		o     Options
		kind  error
		name  string
		field string
	}{
		{Options{ExpectHash: "fnv1a_32"}, ErrRingRefused, "RK_EEXPECT", "hash"},
		{Options{ExpectVnodeFactor: 160}, ErrRingRefused, "RK_EEXPECT", "vnode_factor"},
		{Options{ExpectScheme: "ketama"}, ErrRingRefused, "RK_EEXPECT", "scheme"},
		{Options{ExpectHash: "no_such_hash"}, ErrInvalidArgument, "RK_EINVAL", "expect_hash"},
		{Options{ClientID: "has space"}, ErrInvalidArgument, "RK_EINVAL", "client_id"},
		{Options{Server: "127.0.0.1:7070"}, ErrInvalidArgument, "RK_EINVAL", "server"},
		{Options{Cluster: "nothing-here"}, ErrUnreachable, "RK_EHTTP", ""},
	}
	for _, tc := range cases {
		o := tc.o
		o.NoRefresh = true
		if o.Server == "" {
			o.Server = s.url
		}
		if o.Cluster == "" {
			o.Cluster = "c"
		}
		_, err := New(context.Background(), o)
		var e *Error
		if !errors.Is(err, tc.kind) || !errors.As(err, &e) || e.Name != tc.name || e.Field != tc.field {
			t.Errorf("%+v: got %v (%+v)", tc.o, err, e)
		}
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := "http://" + l.Addr().String()
	l.Close()
	if _, err := New(context.Background(), Options{Server: closed, Cluster: "c", Timeout: 2 * time.Second}); !errors.Is(err, ErrUnreachable) {
		t.Errorf("a closed port: %v", err)
	}
}

// A server that lies: each doctored ring document is refused as the C client refuses it.
func TestHostileRingRefused(t *testing.T) {
	s := startServer(t)
	s.publish(t, "c", topology(3, 40))
	_, doc := s.call(t, "GET", "/v1/clusters/c/ring", nil)
	doctors := map[string]func(map[string]any) any{
		"RK_ECLUSTER":     func(d map[string]any) any { d["cluster"] = "other"; return d },
		"RK_EFINGERPRINT": func(d map[string]any) any { d["fingerprint"] = "0123456789abcdef"; return d },
		"RK_EUNKNOWNHASH": func(d map[string]any) any { d["hash"] = "sha1"; return d },
		"RK_EDOCUMENT":    func(d map[string]any) any { return map[string]any{"not": "a version"} },
	}
	for name, doctor := range doctors {
		copied := map[string]any{}
		for k, v := range doc {
			copied[k] = v
		}
		body, _ := json.Marshal(doctor(copied))
		liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}))
		_, err := New(context.Background(), Options{Server: liar.URL, Cluster: "c", NoRefresh: true})
		liar.Close()
		var e *Error
		if !errors.Is(err, ErrRingRefused) || !errors.As(err, &e) || e.Name != name {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestLastKnownGood(t *testing.T) {
	s := startServer(t)
	doc := topology(4, 40)
	s.publish(t, "c", doc)
	cache := filepath.Join(t.TempDir(), "c.lkg")
	c, err := New(context.Background(), Options{Server: s.url, Cluster: "c", Cache: cache, NoRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	s.stop()
	c, err = New(context.Background(), Options{Server: s.url, Cluster: "c", Cache: cache, NoRefresh: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, _ := c.Lookup([]byte("user:7"))
	if st := c.Status(); !st.FromCache || st.Version != 1 || got != offline(t, doc).Lookup([]byte("user:7")) {
		t.Fatalf("status %+v, %s", st, got)
	}
}

func TestLongPollUpdate(t *testing.T) {
	s := startServer(t)
	s.publish(t, "c", topology(3, 40))
	c, err := New(context.Background(), Options{Server: s.url, Cluster: "c", Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	doc := topology(6, 40)
	s.publish(t, "c", doc)
	if !waitFor(func() bool { return c.Version() == 2 }) {
		t.Fatal("version 2 never arrived")
	}
	ring := offline(t, doc)
	many, err := c.LookupMany(keys()) // its first call on v2
	for i, k := range keys() {
		if got, _ := c.Lookup(k); got != ring.Lookup(k) || err != nil || many[i] != got {
			t.Fatalf("%q: %s (%s, %v), want %s", k, got, many[i], err, ring.Lookup(k))
		}
	}
}

func TestMigrationWindow(t *testing.T) {
	s := startServer(t)
	before, after := topology(3, 40), topology(5, 40)
	s.publish(t, "c", before)
	if status, _ := s.call(t, "PUT", "/v1/clusters/c/policy", map[string]any{"migration_window": true}); status != 200 {
		t.Fatal(status)
	}
	c, err := New(context.Background(), Options{Server: s.url, Cluster: "c", NoRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s.publish(t, "c", after)
	if changed, err := c.Refresh(0); !changed || err != nil || c.Version() != 2 || c.PreviousVersion() != 1 {
		t.Fatalf("refresh %v %v: v%d prev %d", changed, err, c.Version(), c.PreviousVersion())
	}
	old, now := offline(t, before), offline(t, after)
	moved := 0
	for _, k := range keys() {
		owner, prev, _ := c.Owners(k)
		if owner != now.Lookup(k) || prev != old.Lookup(k) {
			t.Fatalf("%q: %s %s", k, owner, prev)
		}
		if owner != prev {
			moved++
		}
	}
	if moved == 0 || moved == len(keys()) {
		t.Fatalf("%d keys moved", moved)
	}
}

func TestFleetReport(t *testing.T) {
	s := startServer(t)
	s.publish(t, "c", topology(3, 40))
	c, err := New(context.Background(), Options{Server: s.url, Cluster: "c", ClientID: "go-fleet",
		ExpectVnodeFactor: 40, NoRefresh: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	entry := func() map[string]any {
		_, out := s.call(t, "GET", "/v1/clusters/c/clients", nil)
		for _, e := range out["clients"].([]any) {
			if m := e.(map[string]any); m["id"] == "go-fleet" {
				return m
			}
		}
		return nil
	}
	c.Refresh(0) // its If-None-Match says it holds v1
	if e := entry(); e == nil || e["held"] != 1.0 {
		t.Fatalf("entry %v", e)
	}
	s.publish(t, "c", topology(3, 160))
	for i := 0; i < 2; i++ { // refused, then said to be refused in the next request
		if _, err := c.Refresh(0); !errors.Is(err, ErrRingRefused) {
			t.Fatalf("refresh: %v", err)
		}
	}
	if e := entry(); e["held"] != 1.0 || e["refused"] != 2.0 || c.Version() != 1 {
		t.Fatalf("entry %v, v%d", e, c.Version())
	}
}

func TestConcurrentLookups(t *testing.T) {
	s := startServer(t)
	sizes := []int{3, 5, 4, 6, 2}
	s.publish(t, "c", topology(sizes[0], 40))
	c, err := New(context.Background(), Options{Server: s.url, Cluster: "c", Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	valid := map[string]bool{}
	for i := 0; i < 6; i++ {
		valid[fmt.Sprintf("n%d", i)] = true
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, k := range keys()[:100] {
					if got, err := c.Lookup(k); err != nil || !valid[got] {
						errs <- fmt.Errorf("%q: %q %v", k, got, err)
						return
					}
				}
			}
		}()
	}
	for v, n := range sizes[1:] {
		s.publish(t, "c", topology(n, 40))
		if !waitFor(func() bool { return c.Version() == int64(v+2) }) {
			t.Fatalf("version %d never arrived", v+2)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A one-shot tool (NotInFleet) fetches the ring without being counted in the fleet report, so a
// rollout's hold never waits for it; a client with an id is counted.
func TestNotInFleet(t *testing.T) {
	s := startServer(t)
	s.publish(t, "c", topology(3, 40))
	for _, o := range []Options{{NotInFleet: true}, {ClientID: "go-counted"}} {
		o.Server, o.Cluster, o.NoRefresh = s.url, "c", true
		c, err := New(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Refresh(0); err != nil || c.Version() != 1 {
			t.Fatalf("refresh: %v, v%d", err, c.Version())
		}
		c.Close()
	}
	_, out := s.call(t, "GET", "/v1/clusters/c/clients", nil)
	if total := out["summary"].(map[string]any)["total"]; total != 1.0 {
		t.Fatalf("%v clients counted, want the one with an id: %v", total, out["clients"])
	}
}

// Close while 8 goroutines look up: each lookup answers, or returns ErrNoRing once closed; never a
// crash or a race (go test -race), 200 rounds.
func TestCloseDuringLookups(t *testing.T) {
	s := startServer(t)
	s.publish(t, "c", topology(5, 40))
	for round := 0; round < 200; round++ {
		c, err := New(context.Background(), Options{Server: s.url, Cluster: "c", NotInFleet: true,
			Wait: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		started := make(chan struct{})
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-started
				for n := 0; n < 1000000; n++ { // bounded: ErrNoRing comes long before
					_, err := c.LookupString("key-" + strconv.Itoa(n))
					if err == nil {
						_, err = c.LookupMany([][]byte{[]byte("a"), []byte("b")})
					}
					if err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		close(started)
		time.Sleep(time.Duration(round%5) * time.Millisecond)
		c.Close()
		wg.Wait()
		close(errs)
		for err := range errs {
			if !errors.Is(err, ErrNoRing) {
				t.Fatalf("round %d: %v, want ErrNoRing after Close", round, err)
			}
		}
	}
	runtime.GC() // the finalizers free the closed clients
}
