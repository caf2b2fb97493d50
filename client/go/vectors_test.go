package ringkeeper

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Every golden vector of tests/vectors (RK_VECTORS_DIR) through the binding.

func load(t *testing.T, name string, into any) {
	t.Helper()
	dir := os.Getenv("RK_VECTORS_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "tests", "vectors")
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err == nil {
		err = json.Unmarshal(b, into)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func ringOf(t *testing.T, doc json.RawMessage) *Ring {
	t.Helper()
	topo, err := ParseTopology(doc)
	if err != nil {
		t.Fatal(err)
	}
	r, err := topo.Ring()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestVectorRings(t *testing.T) {
	var cases []struct {
		Name        string
		Topology    json.RawMessage
		Points      int
		Fingerprint string
		Lookups     []struct{ Key, Node string }
		Shares      map[string]float64
	}
	load(t, "rings.json", &cases)
	for _, c := range cases {
		r := ringOf(t, c.Topology)
		if r.Points() != c.Points || r.Fingerprint() != c.Fingerprint {
			t.Errorf("%s: %d points %s, want %d %s", c.Name, r.Points(), r.Fingerprint(), c.Points, c.Fingerprint)
		}
		for _, l := range c.Lookups {
			if got := r.Lookup([]byte(l.Key)); got != l.Node {
				t.Errorf("%s: %q -> %s, want %s", c.Name, l.Key, got, l.Node)
			}
		}
		for id, share := range c.Shares {
			if math.Abs(r.Shares()[id]-share) > 1e-9 {
				t.Errorf("%s: share of %s %g, want %g", c.Name, id, r.Shares()[id], share)
			}
		}
	}
}

func TestVectorPlans(t *testing.T) {
	var cases []struct {
		Name          string
		From, To      json.RawMessage
		MovedFraction float64 `json:"moved_fraction"`
		Transfers     []struct {
			From, To string
			Fraction float64
		}
	}
	load(t, "plans.json", &cases)
	for _, c := range cases {
		p, err := Plan(ringOf(t, c.From), ringOf(t, c.To))
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.MovedFraction-c.MovedFraction) > 1e-9 || len(p.Transfers) != len(c.Transfers) {
			t.Fatalf("%s: moved %g in %d transfers, want %g in %d", c.Name, p.MovedFraction,
				len(p.Transfers), c.MovedFraction, len(c.Transfers))
		}
		got := map[[2]string]float64{}
		for _, x := range p.Transfers {
			got[[2]string{x.From, x.To}] = x.Fraction
		}
		for _, x := range c.Transfers {
			if f, ok := got[[2]string{x.From, x.To}]; !ok || math.Abs(f-x.Fraction) > 1e-9 {
				t.Errorf("%s: %s -> %s %g, want %g", c.Name, x.From, x.To, f, x.Fraction)
			}
		}
	}
}

func TestVectorKetama(t *testing.T) {
	var doc struct {
		Cases []struct {
			Name     string
			Topology json.RawMessage
			Lookups  [][2]string
		}
	}
	load(t, "ketama.json", &doc)
	for _, c := range doc.Cases {
		r := ringOf(t, c.Topology)
		if r.Topology.Scheme() != "ketama" {
			t.Fatalf("%s: scheme %s", c.Name, r.Topology.Scheme())
		}
		for _, l := range c.Lookups {
			key, _ := hex.DecodeString(l[0])
			if got := r.Lookup(key); got != l[1] {
				t.Errorf("%s: %s -> %s, want %s", c.Name, l[0], got, l[1])
			}
		}
	}
}

func TestTopologyRefused(t *testing.T) {
	_, err := ParseTopology([]byte(`{"hash":"xxh3_64","vnode_factor":0,"nodes":[]}`))
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, ErrInvalidTopology) || e.Field != "vnode_factor" {
		t.Fatalf("got %v", err)
	}
	if _, err := ParseTopology([]byte("{not json")); !errors.Is(err, ErrInvalidTopology) {
		t.Fatalf("got %v", err)
	}
}
