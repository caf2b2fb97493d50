package ringkeeper

/*
#include <stdlib.h>
#include "ringkeeper.h"
*/
import "C"

import (
	"os"
	"runtime"
	"unsafe"
)

// Node is one node of a topology.
type Node struct {
	ID, Addr string
	Weight   float64
}

// Topology is a validated topology (docs/RING.md, KETAMA.md, LOADBALANCERS.md); immutable.
type Topology struct {
	t     *C.rk_topology
	Nodes []Node
}

// ParseTopology validates the topology (or version document) in doc.
func ParseTopology(doc []byte) (*Topology, error) {
	var err C.rk_error
	text := C.CBytes(doc)
	defer C.free(text)
	t := C.rk_topology_parse((*C.char)(text), C.size_t(len(doc)), &err)
	if t == nil {
		return nil, newError(C.int(err.code), &err)
	}
	out := &Topology{t: t}
	for i := 0; i < int(C.rk_topology_node_count(t)); i++ {
		n := C.rk_topology_node(t, C.size_t(i))
		out.Nodes = append(out.Nodes, Node{C.GoString(n.id), C.GoString(n.addr), float64(n.weight)})
	}
	runtime.SetFinalizer(out, func(t *Topology) { C.rk_topology_free(t.t) })
	return out, nil
}

// TopologyFromFile is ParseTopology of the file at path.
func TopologyFromFile(path string) (*Topology, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTopology(doc)
}

// Scheme and Hash are the topology's scheme and hash names.
func (t *Topology) Scheme() string {
	defer runtime.KeepAlive(t)
	return C.GoString(C.rk_scheme_name(C.rk_topology_scheme(t.t)))
}

func (t *Topology) Hash() string {
	defer runtime.KeepAlive(t)
	return C.GoString(C.rk_hash_name(C.rk_topology_hash(t.t)))
}

// Ring is the ring of a topology, offline.
type Ring struct {
	r        *C.rk_ring
	ids      []string
	Topology *Topology
}

// Ring builds the topology's ring.
func (t *Topology) Ring() (*Ring, error) {
	var err C.rk_error
	r := C.rk_ring_build(t.t, &err)
	runtime.KeepAlive(t)
	if r == nil {
		return nil, newError(C.int(err.code), &err)
	}
	out := &Ring{r: r, ids: ids(r), Topology: t}
	runtime.SetFinalizer(out, func(r *Ring) { C.rk_ring_free(r.r) })
	return out, nil
}

// Lookup returns the id of the node that owns key.
func (r *Ring) Lookup(key []byte) string {
	defer runtime.KeepAlive(r)
	return r.ids[C.rk_ring_lookup(r.r, keyPtr(key), C.size_t(len(key)))]
}

// LookupReplicas returns up to n (1..64) distinct nodes clockwise from key, owner first.
func (r *Ring) LookupReplicas(key []byte, n int) ([]string, error) {
	defer runtime.KeepAlive(r)
	return replicas(r.r, key, n)
}

// Fingerprint is the ring's fingerprint (16 hex digits); Points its point count.
func (r *Ring) Fingerprint() string {
	defer runtime.KeepAlive(r)
	return C.GoString(C.rk_ring_fingerprint_hex(r.r))
}

func (r *Ring) Points() int {
	defer runtime.KeepAlive(r)
	return int(C.rk_ring_point_count(r.r))
}

// Shares maps each node id to its share of the hash space.
func (r *Ring) Shares() map[string]float64 {
	defer runtime.KeepAlive(r)
	out := make(map[string]float64, len(r.ids))
	for i, id := range r.ids {
		out[id] = float64(C.rk_ring_share(r.r, C.size_t(i)))
	}
	return out
}

// Transfer is what moves from one node to another in a plan.
type Transfer struct {
	From, To string
	Fraction float64
	Arcs     int
}

// PlanResult is what moves between two rings of one hash (docs/RING.md, "Plans").
type PlanResult struct {
	MovedFraction, MinimalFraction float64
	Transfers                      []Transfer
}

// Plan computes the plan from ring a to ring b.
func Plan(a, b *Ring) (*PlanResult, error) {
	var err C.rk_error
	p := C.rk_plan_new(a.r, b.r, nil, &err)
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	if p == nil {
		return nil, newError(C.int(err.code), &err)
	}
	defer C.rk_plan_free(p)
	out := &PlanResult{MovedFraction: float64(C.rk_plan_moved_fraction(p)),
		MinimalFraction: float64(C.rk_plan_minimal_fraction(p))}
	var n C.size_t
	nodes := unsafe.Slice(C.rk_plan_nodes(p, &n), int(n))
	t := unsafe.Slice(C.rk_plan_transfers(p, &n), int(n))
	for _, x := range t {
		out.Transfers = append(out.Transfers, Transfer{C.GoString(nodes[x.from].id),
			C.GoString(nodes[x.to].id), float64(x.fraction), int(x.arcs)})
	}
	return out, nil
}
