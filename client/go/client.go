package ringkeeper

/*
#include <stdlib.h>
#include "ringkeeper.h"
*/
import "C"

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Options configure a Client; Server and Cluster are required, the rest may stay zero.
type Options struct {
	Server            string        // base URL, "http://127.0.0.1:7070"
	Cluster           string        // the cluster
	ExpectHash        string        // refuse a ring of another hash ("xxh3_64"); "": any
	ExpectVnodeFactor uint32        // refuse a ring of another vnode_factor; 0: any
	ExpectScheme      string        // "ringkeeper", "ketama", "nginx", "haproxy", "envoy_ring_hash", "grpc_ring_hash", "maglev"; "": any
	Cache             string        // the last-known-good file, or "" for none
	ClientID          string        // RK-Client, how the fleet report names this client; "": host:pid
	Token             string        // bearer token, or ""
	Timeout           time.Duration // a whole request; 0: 10 s
	Wait              time.Duration // the refresher's long poll; 0: 25 s
	NoRefresh         bool          // no background refresher: call Refresh yourself
	NotInFleet        bool          // a one-shot tool: no RK-Client sent, not counted in the fleet
}

// Status is rk_client_status: the version in service and what the fetches came to.
type Status struct {
	Version                              int64
	FromCache                            bool
	Accepted, Refused, Errors, Discarded uint64
	LastError                            int
	LastMessage                          string
}

// Client is the active ring of one cluster, verified, kept fresh by a background long poll.
// Lookups are safe on any goroutines, also while the ring is refreshed or the Client is closed.
type Client struct {
	c      *C.rk_client // set once by New; freed by the finalizer, never while a method runs
	closed atomic.Bool
	view   atomic.Pointer[view]
	mu     sync.Mutex // Refresh and Close
}

// view is the node ids of the snapshot the client last saw, by index.
type view struct {
	serial uint64
	ids    []string
}

// New fetches the ring (from Options.Cache when the server cannot be reached) and returns a
// Client with the ring in service, or an error when none can be: errors.Is(err, ErrRingRefused),
// ErrUnreachable ... ctx's deadline, when sooner, bounds the fetch.
func New(ctx context.Context, o Options) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var strs []*C.char
	text := func(s string) *C.char {
		if s == "" {
			return nil
		}
		p := C.CString(s)
		strs = append(strs, p)
		return p
	}
	defer func() {
		for _, p := range strs {
			C.free(unsafe.Pointer(p))
		}
	}()
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	if timeout < time.Millisecond {
		timeout = time.Millisecond // 0 would be the library's default, 10 s
	}
	cfg := C.rk_client_config{server: text(o.Server), cluster: text(o.Cluster),
		expect_hash: text(o.ExpectHash), expect_vnode_factor: C.uint32_t(o.ExpectVnodeFactor),
		token: text(o.Token), timeout_ms: C.long(timeout.Milliseconds()), cache_file: text(o.Cache),
		expect_scheme: text(o.ExpectScheme), client_id: text(o.ClientID)}
	if o.NotInFleet { // "" is the library's "not sent": a rollout's hold never waits for it
		cfg.client_id = C.CString("")
		strs = append(strs, cfg.client_id)
	}
	var err C.rk_error
	c := &Client{c: C.rk_client_new(&cfg, &err)}
	if c.c == nil {
		return nil, newError(C.int(err.code), &err)
	}
	c.view.Store(&view{})
	runtime.SetFinalizer(c, (*Client).free)
	if e := check(C.rk_client_fetch(c.c, &err), &err); e != nil {
		c.Close()
		return nil, e
	}
	wait := o.Wait
	if wait == 0 {
		wait = 25 * time.Second
	}
	if !o.NoRefresh {
		if e := check(C.rk_client_start_refresher(c.c, C.unsigned(wait/time.Second), 0, &err), &err); e != nil {
			c.Close()
			return nil, e
		}
	}
	return c, nil
}

// Close stops the refresher; calls after it return ErrNoRing. A lookup still running on another
// goroutine finishes safely: the library's client is freed once the Client is unreachable (a
// finalizer), so that no lookup pays for a lock or a count to keep it alive.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed.Swap(true) {
		C.rk_client_stop_refresher(c.c)
	}
	return nil
}

// free is the finalizer: no method can run any more.
func (c *Client) free() {
	C.rk_client_free(c.c)
}

var errClosed = &Error{Code: int(C.RK_ENORING), Name: "RK_ENORING", Message: "ringkeeper: the client is closed"}

// Lookup returns the id of the node that owns key in the ring in service.
func (c *Client) Lookup(key []byte) (string, error) {
	if c.closed.Load() {
		return "", errClosed
	}
	v := c.view.Load()
	i := C.rk_client_lookup_index(c.c, C.uint64_t(v.serial), keyPtr(key), C.size_t(len(key)))
	runtime.KeepAlive(c) // c.c is not freed while the call runs
	if i >= 0 {
		return v.ids[i], nil
	}
	return c.lookupAnew(key)
}

// LookupString is Lookup of the string's bytes (UTF-8): the same node as Lookup([]byte(key)).
func (c *Client) LookupString(key string) (string, error) {
	return c.Lookup([]byte(key))
}

// LookupMany is Lookup of each key, in order, in one call into the library (the keys packed into
// one buffer), all from one snapshot: for batches, where the call's own cost would dominate.
func (c *Client) LookupMany(keys [][]byte) ([]string, error) {
	if len(keys) == 0 {
		return []string{}, nil
	}
	var packed []byte
	lens, out := make([]C.size_t, len(keys)), make([]C.uint32_t, len(keys))
	for i, k := range keys {
		packed, lens[i] = append(packed, k...), C.size_t(len(k))
	}
	packed = append(packed, 0) // a valid address when every key is empty
	for try := 0; try < 3; try++ {
		if c.closed.Load() {
			return nil, errClosed
		}
		v := c.view.Load()
		found := C.rk_client_lookup_many(c.c, C.uint64_t(v.serial), (*C.char)(unsafe.Pointer(&packed[0])),
			&lens[0], C.size_t(len(keys)), &out[0]) == 0
		runtime.KeepAlive(c)
		if found {
			got := make([]string, len(keys))
			for i, at := range out {
				got[i] = v.ids[at]
			}
			return got, nil
		}
		if _, err := c.lookupAnew(nil); err != nil { // a new snapshot: keep its ids, look again
			return nil, err
		}
	}
	got := make([]string, len(keys))
	for i, k := range keys {
		var err error
		if got[i], err = c.Lookup(k); err != nil {
			return nil, err
		}
	}
	return got, nil
}

// lookupAnew keeps the node ids of the snapshot now in service, and looks up in it.
func (c *Client) lookupAnew(key []byte) (string, error) {
	s, err := c.acquire()
	if err != nil {
		return "", err
	}
	defer C.rk_snapshot_release(s)
	ring := C.rk_snapshot_ring(s)
	v := &view{serial: uint64(C.rk_snapshot_serial(s)), ids: ids(ring)}
	c.view.Store(v)
	return v.ids[C.rk_ring_lookup(ring, keyPtr(key), C.size_t(len(key)))], nil
}

func (c *Client) acquire() (*C.rk_snapshot, error) {
	if c.closed.Load() {
		return nil, errClosed
	}
	s := C.rk_client_acquire(c.c) // a snapshot outlives the client; the call does not
	runtime.KeepAlive(c)
	if s == nil {
		return nil, newError(C.RK_ENORING, nil)
	}
	return s, nil
}

// LookupReplicas returns up to r (1..64) distinct nodes clockwise from key, owner first.
func (c *Client) LookupReplicas(key []byte, r int) ([]string, error) {
	s, err := c.acquire()
	if err != nil {
		return nil, err
	}
	defer C.rk_snapshot_release(s)
	return replicas(C.rk_snapshot_ring(s), key, r)
}

// Owners returns key's owner now and, while a previous ring is kept (a migration window: read
// there what has not moved yet), its owner there; previous is "" when there is none.
func (c *Client) Owners(key []byte) (owner, previous string, err error) {
	s, err := c.acquire()
	if err != nil {
		return "", "", err
	}
	defer C.rk_snapshot_release(s)
	ring, prev := C.rk_snapshot_ring(s), C.rk_snapshot_previous(s)
	owner = ids(ring)[C.rk_ring_lookup(ring, keyPtr(key), C.size_t(len(key)))]
	if prev != nil {
		previous = ids(prev)[C.rk_ring_lookup(prev, keyPtr(key), C.size_t(len(key)))]
	}
	return owner, previous, nil
}

// Version is the version of the ring in service, PreviousVersion that of the previous ring kept
// (0 when none), Fingerprint the ring's (16 hex digits, docs/RING.md); all 0 or "" once closed.
func (c *Client) Version() int64 {
	v, _ := c.snapshotInt(func(s *C.rk_snapshot) int64 { return int64(C.rk_snapshot_version(s)) })
	return v
}

func (c *Client) PreviousVersion() int64 {
	v, _ := c.snapshotInt(func(s *C.rk_snapshot) int64 { return int64(C.rk_snapshot_previous_version(s)) })
	return v
}

func (c *Client) Fingerprint() string {
	s, err := c.acquire()
	if err != nil {
		return ""
	}
	defer C.rk_snapshot_release(s)
	return C.GoString(C.rk_ring_fingerprint_hex(C.rk_snapshot_ring(s)))
}

func (c *Client) snapshotInt(f func(*C.rk_snapshot) int64) (int64, error) {
	s, err := c.acquire()
	if err != nil {
		return 0, err
	}
	defer C.rk_snapshot_release(s)
	return f(s), nil
}

// Refresh asks for a newer ring now, long-polling up to wait (whole seconds, at most 60); true
// when one was accepted. Only with Options.NoRefresh.
func (c *Client) Refresh(wait time.Duration) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return false, errClosed
	}
	var err C.rk_error
	var changed C.int
	if e := check(C.rk_client_refresh(c.c, C.unsigned(wait/time.Second), &changed, &err), &err); e != nil {
		return false, e
	}
	return changed != 0, nil
}

// Status is the client's rk_client_status.
func (c *Client) Status() Status {
	if c.closed.Load() {
		return Status{}
	}
	var st C.rk_client_status
	C.rk_client_status_get(c.c, &st)
	runtime.KeepAlive(c)
	return Status{Version: int64(st.version), FromCache: st.from_cache != 0,
		Accepted: uint64(st.accepted), Refused: uint64(st.refused), Errors: uint64(st.errors),
		Discarded: uint64(st.discarded), LastError: int(st.last_error),
		LastMessage: C.GoString(&st.last_message[0])}
}
