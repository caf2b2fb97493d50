"""_offline.py — topologies, rings and plans without a server: the library's own, wrapped."""
import json
from typing import Dict, List, NamedTuple, Tuple, Union

from ringkeeper._errors import error_from
from ringkeeper._native import ffi, lib

Key = Union[str, bytes]


def key_bytes(key: Key) -> bytes:
    """A key as the ring hashes it: bytes as they are, str as UTF-8 (so both route the same)."""
    return key.encode() if type(key) is str else key


class Node(NamedTuple):
    id: str
    addr: str
    weight: float


def _nodes(topology) -> List[Node]:
    out = []
    for i in range(lib.rk_topology_node_count(topology)):
        n = lib.rk_topology_node(topology, i)
        out.append(Node(ffi.string(n.id).decode(), ffi.string(n.addr).decode(), n.weight))
    return out


class Topology:
    """A validated topology (docs/RING.md, KETAMA.md, LOADBALANCERS.md): its scheme, hash and
    nodes. Made from a document; immutable."""

    def __init__(self, text: Union[str, bytes]) -> None:
        data = key_bytes(text)
        err = ffi.new("rk_error *")
        t = lib.rk_topology_parse(data, len(data), err)
        if t == ffi.NULL:
            raise error_from(err.code, err)
        self._t = ffi.gc(t, lib.rk_topology_free)
        self.nodes: List[Node] = _nodes(t)

    @classmethod
    def from_file(cls, path: str) -> "Topology":
        """The topology (or version document) in the JSON file at `path`."""
        with open(path, "rb") as f:
            return cls(f.read())

    @classmethod
    def from_dict(cls, doc: dict) -> "Topology":
        return cls(json.dumps(doc))

    @property
    def scheme(self) -> str:
        return ffi.string(lib.rk_scheme_name(lib.rk_topology_scheme(self._t))).decode()

    @property
    def hash(self) -> str:
        return ffi.string(lib.rk_hash_name(lib.rk_topology_hash(self._t))).decode()

    @property
    def vnode_factor(self) -> int:
        return lib.rk_topology_vnode_factor(self._t)

    @property
    def points(self) -> int:
        return lib.rk_topology_points(self._t)

    def ring(self) -> "Ring":
        return Ring(self)


class Ring:
    """The ring of a topology: lookups, replicas, shares and the fingerprint, offline."""

    def __init__(self, topology: Topology) -> None:
        err = ffi.new("rk_error *")
        r = lib.rk_ring_build(topology._t, err)
        if r == ffi.NULL:
            raise error_from(err.code, err)
        self._r = ffi.gc(r, lib.rk_ring_free)
        self.topology = topology
        self._ids = tuple(n.id for n in topology.nodes)

    @property
    def fingerprint(self) -> str:
        return ffi.string(lib.rk_ring_fingerprint_hex(self._r)).decode()

    @property
    def point_count(self) -> int:
        return lib.rk_ring_point_count(self._r)

    def lookup(self, key: Key) -> str:
        k = key_bytes(key)
        return self._ids[lib.rk_ring_lookup(self._r, k, len(k))]

    def lookup_replicas(self, key: Key, r: int) -> List[str]:
        return replicas(self._r, self._ids, key, r)

    def shares(self) -> Dict[str, float]:
        return {i: lib.rk_ring_share(self._r, k) for k, i in enumerate(self._ids)}


def replicas(ring, ids: Tuple[str, ...], key: Key, r: int) -> List[str]:
    """Up to r distinct nodes clockwise from the key on the C ring `ring`, owner first."""
    if not 1 <= r <= 64:
        raise ValueError("r must be 1..64, got %r" % (r,))
    k, out = key_bytes(key), ffi.new("uint32_t[]", r)
    n = lib.rk_ring_lookup_replicas(ring, k, len(k), out, r)
    return [ids[out[i]] for i in range(n)]


class Transfer(NamedTuple):
    source: str
    target: str
    fraction: float
    arcs: int


class Plan:
    """What moves between two rings of one hash: the moved and minimal fractions and the
    transfers between nodes (docs/RING.md, "Plans")."""

    def __init__(self, a: Ring, b: Ring) -> None:
        err = ffi.new("rk_error *")
        p = lib.rk_plan_new(a._r, b._r, ffi.NULL, err)
        if p == ffi.NULL:
            raise error_from(err.code, err)
        p = ffi.gc(p, lib.rk_plan_free)
        self.moved_fraction: float = lib.rk_plan_moved_fraction(p)
        self.minimal_fraction: float = lib.rk_plan_minimal_fraction(p)
        n = ffi.new("size_t *")
        nodes = lib.rk_plan_nodes(p, n)
        ids = [ffi.string(nodes[i].id).decode() for i in range(n[0])]
        t = lib.rk_plan_transfers(p, n)
        self.transfers: List[Transfer] = [
            Transfer(ids[getattr(t[i], "from")], ids[t[i].to], t[i].fraction, t[i].arcs)
            for i in range(n[0])]


def plan(a: Union[Topology, Ring], b: Union[Topology, Ring]) -> Plan:
    """The plan from `a` to `b` (topologies or rings)."""
    return Plan(a if isinstance(a, Ring) else Ring(a), b if isinstance(b, Ring) else Ring(b))

