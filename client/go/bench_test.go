package ringkeeper

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand"
	"sort"
	"testing"
	"unsafe"

	"ringkeeper/internal/cbench"
)

// The cost of a lookup through the binding (docs/PERFORMANCE.md, "The Go binding"): Client.Lookup
// on a 100 x 160 ring served by a ringkeeperd, the same C call in a C loop, and a pure-Go ring of
// the same points (sort.Search) as users would write it, with crypto/md5 or hash/fnv keys.
//
//	go test -run '^$' -bench . -benchtime 2000000x

const benchKeys = 1 << 16

func benchKeyList() [][]byte {
	rng := rand.New(rand.NewSource(26))
	out := make([][]byte, benchKeys)
	for i := range out {
		k := make([]byte, 16)
		for j := range k {
			k[j] = "abcdefghijklmnopqrstuvwxyz0123456789"[rng.Intn(36)]
		}
		out[i] = k
	}
	return out
}

func benchClient(b *testing.B, hash string) (*Client, *Ring) {
	s := startServer(&testing.T{})
	doc := topology(100, 160)
	doc["hash"] = hash
	s.publish(&testing.T{}, "c", doc)
	b.Cleanup(s.stop)
	c, err := New(context.Background(), Options{Server: s.url, Cluster: "c", NoRefresh: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	c.Lookup([]byte("warm"))
	return c, offline(&testing.T{}, doc)
}

func BenchmarkClientLookup(b *testing.B) {
	for _, hash := range []string{"xxh3_64", "md5_32", "fnv1a_32"} {
		b.Run(hash, func(b *testing.B) {
			c, _ := benchClient(b, hash)
			keys := benchKeyList()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Lookup(keys[i%benchKeys])
			}
		})
	}
}

func BenchmarkLookupMany(b *testing.B) {
	c, _ := benchClient(b, "xxh3_64")
	keys := benchKeyList()
	b.ResetTimer()
	for done := 0; done < b.N; done += 1024 {
		at := done % benchKeys
		c.LookupMany(keys[at : at+1024])
	}
}

func BenchmarkCCall(b *testing.B) {
	c, _ := benchClient(b, "xxh3_64")
	packed := make([]byte, 0, benchKeys*16)
	for _, k := range benchKeyList() {
		packed = append(packed, k...)
	}
	serial := c.view.Load().serial
	b.ResetTimer()
	cbench.Lookups(unsafe.Pointer(c.c), serial, packed, 16, b.N)
}

// pureRing is the ring of docs/RING.md written plainly in Go: points "<id>#<i>" hashed, sorted,
// and a key's owner found by sort.Search.
type pureRing struct {
	pos   []uint32
	owner []string
}

func newPureRing(h func([]byte) uint32) *pureRing {
	type point struct {
		p uint32
		o string
	}
	var pts []point
	for n := 0; n < 100; n++ {
		for i := 0; i < 160; i++ {
			pts = append(pts, point{h([]byte(fmt.Sprintf("n%d#%d", n, i))), fmt.Sprintf("n%d", n)})
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].p < pts[j].p })
	r := &pureRing{}
	for _, p := range pts {
		r.pos, r.owner = append(r.pos, p.p), append(r.owner, p.o)
	}
	return r
}

func (r *pureRing) lookup(h uint32) string {
	i := sort.Search(len(r.pos), func(i int) bool { return r.pos[i] >= h })
	if i == len(r.pos) {
		i = 0
	}
	return r.owner[i]
}

func md5_32(k []byte) uint32 {
	s := md5.Sum(k)
	return binary.BigEndian.Uint32(s[:4])
}

func fnv1a32(k []byte) uint32 {
	h := fnv.New32a()
	h.Write(k)
	return h.Sum32()
}

func BenchmarkPureGo(b *testing.B) {
	for name, h := range map[string]func([]byte) uint32{"md5_32": md5_32, "fnv1a_32": fnv1a32} {
		b.Run(name, func(b *testing.B) {
			_, ring := benchClient(b, name)
			r, keys := newPureRing(h), benchKeyList()
			for _, k := range keys[:2000] {
				if r.lookup(h(k)) != ring.Lookup(k) {
					b.Fatalf("the pure ring and the library disagree on %q", k)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.lookup(h(keys[i%benchKeys]))
			}
		})
	}
}
