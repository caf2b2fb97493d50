"""test_vectors.py — every golden vector of tests/vectors through the Python binding: rings
(points, fingerprints, lookups, shares), plans (moved fraction, transfers) and ketama owners."""
import json
import os

import pytest

import ringkeeper as rk


def load(vectors, name):
    with open(os.path.join(vectors, name)) as f:
        return json.load(f)


def test_rings(vectors):
    for case in load(vectors, "rings.json"):
        ring = rk.Topology.from_dict(case["topology"]).ring()
        assert ring.point_count == case["points"], case["name"]
        assert ring.fingerprint == case["fingerprint"], case["name"]
        for look in case["lookups"]:
            assert ring.lookup(look["key"]) == look["node"], (case["name"], look)
            assert ring.lookup(look["key"].encode()) == look["node"]  # str and bytes route the same
        for node, share in case["shares"].items():
            assert ring.shares()[node] == pytest.approx(share, abs=1e-9)


def test_plans(vectors):
    for case in load(vectors, "plans.json"):
        p = rk.plan(rk.Topology.from_dict(case["from"]), rk.Topology.from_dict(case["to"]))
        assert p.moved_fraction == pytest.approx(case["moved_fraction"], abs=1e-9), case["name"]
        got = {(t.source, t.target): t.fraction for t in p.transfers}
        want = {(t["from"], t["to"]): t["fraction"] for t in case["transfers"]}
        assert got.keys() == want.keys(), case["name"]
        for k, fraction in want.items():
            assert got[k] == pytest.approx(fraction, abs=1e-9)


def test_ketama(vectors):
    for case in load(vectors, "ketama.json")["cases"]:
        topo = rk.Topology.from_dict(case["topology"])
        assert topo.scheme == "ketama"
        ring = topo.ring()
        for key_hex, node in case["lookups"]:
            assert ring.lookup(bytes.fromhex(key_hex)) == node, (case["name"], key_hex)


def test_refusals():
    with pytest.raises(rk.InvalidTopology) as e:
        rk.Topology.from_dict({"hash": "xxh3_64", "vnode_factor": 0, "nodes": []})
    assert e.value.field == "vnode_factor" and e.value.name == "RK_ETOPOLOGY"
    with pytest.raises(rk.InvalidTopology) as e:
        rk.Topology("{not json")
    assert e.value.name == "RK_EJSON"
    ring = rk.Topology.from_dict({"hash": "xxh3_64", "vnode_factor": 4, "nodes": [
        {"id": "a", "addr": "h:1", "weight": 1}, {"id": "b", "addr": "h:2", "weight": 1}]}).ring()
    assert sorted(ring.lookup_replicas("k", 5)) == ["a", "b"]
    with pytest.raises(ValueError):
        ring.lookup_replicas("k", 0)
