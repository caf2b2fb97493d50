// Package ringkeeper routes keys with consistent-hashing rings from ringkeeperd, through the C
// library libringkeeper (cgo, found by pkg-config): one implementation of the ring, so a Go
// service routes each key exactly as the C clients, the CLI and the server do (docs/CLIENT.md).
//
//	c, err := ringkeeper.New(ctx, ringkeeper.Options{Server: "http://127.0.0.1:7070", Cluster: "sessions"})
//	node, err := c.Lookup([]byte("user:42"))
package ringkeeper

/*
#cgo pkg-config: ringkeeper
#include <stdlib.h>
#include "ringkeeper.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// Error is a failure of libringkeeper: Code is the library's (negative), Name its name
// ("RK_EEXPECT"), Field the JSON path to blame ("" when none is), Message the sentence. Test its
// kind with errors.Is against ErrRingRefused, ErrUnreachable and the others.
type Error struct {
	Code    int
	Name    string
	Field   string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Is makes errors.Is(err, ErrRingRefused) and the like true for the codes of that kind.
func (e *Error) Is(target error) bool {
	kind, ok := kinds[e.Code]
	return ok && target == kind
}

// The kinds of failure, for errors.Is.
var (
	ErrInvalidArgument = errors.New("ringkeeper: invalid argument")         // RK_EINVAL
	ErrInvalidTopology = errors.New("ringkeeper: invalid topology")         // RK_EJSON, RK_ETOPOLOGY, RK_ETOOBIG
	ErrUnreachable     = errors.New("ringkeeper: server unreachable")       // RK_EUNREACHABLE, RK_EHTTP, RK_EIO
	ErrRingRefused     = errors.New("ringkeeper: ring refused")             // the client's checks
	ErrNoRing          = errors.New("ringkeeper: no ring accepted")         // RK_ENORING, or closed
	ErrCache           = errors.New("ringkeeper: last-known-good file bad") // RK_ECACHE
)

var kinds = map[int]error{
	C.RK_EINVAL: ErrInvalidArgument, C.RK_EJSON: ErrInvalidTopology,
	C.RK_ETOPOLOGY: ErrInvalidTopology, C.RK_ETOOBIG: ErrInvalidTopology,
	C.RK_EIO: ErrUnreachable, C.RK_EUNREACHABLE: ErrUnreachable, C.RK_EHTTP: ErrUnreachable,
	C.RK_EHASHMISMATCH: ErrRingRefused, C.RK_ETOOLARGE: ErrRingRefused,
	C.RK_EDOCUMENT: ErrRingRefused, C.RK_ECLUSTER: ErrRingRefused, C.RK_EEXPECT: ErrRingRefused,
	C.RK_EUNKNOWNHASH: ErrRingRefused, C.RK_EFINGERPRINT: ErrRingRefused,
	C.RK_EOLDVERSION: ErrRingRefused, C.RK_ENORING: ErrNoRing, C.RK_ECACHE: ErrCache,
}

func newError(code C.int, err *C.rk_error) error {
	e := &Error{Code: int(code), Name: C.GoString(C.rk_errname(code))}
	if err != nil {
		e.Field = C.GoString(&err.field[0])
		e.Message = C.GoString(&err.message[0])
	}
	if e.Message == "" {
		e.Message = fmt.Sprintf("ringkeeper: %s", e.Name)
	}
	return e
}

func check(code C.int, err *C.rk_error) error {
	if code != C.RK_OK {
		return newError(code, err)
	}
	return nil
}

// keyPtr is a key's bytes for C: nil for the empty key (C reads none).
func keyPtr(key []byte) unsafe.Pointer {
	if len(key) == 0 {
		return nil
	}
	return unsafe.Pointer(&key[0])
}

// ids are the node ids of a ring's topology, by index.
func ids(ring *C.rk_ring) []string {
	t := C.rk_ring_topology(ring)
	out := make([]string, int(C.rk_topology_node_count(t)))
	for i := range out {
		out[i] = C.GoString(C.rk_topology_node(t, C.size_t(i)).id)
	}
	return out
}

func replicas(ring *C.rk_ring, key []byte, r int) ([]string, error) {
	if r < 1 || r > 64 {
		return nil, &Error{Code: int(C.RK_EINVAL), Name: "RK_EINVAL", Field: "r",
			Message: fmt.Sprintf("r: must be 1..64, got %d", r)}
	}
	out := make([]C.uint32_t, r)
	n := int(C.rk_ring_lookup_replicas(ring, keyPtr(key), C.size_t(len(key)), &out[0], C.size_t(r)))
	names := ids(ring)
	got := make([]string, n)
	for i := range got {
		got[i] = names[out[i]]
	}
	return got, nil
}
