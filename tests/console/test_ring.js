// test_ring.js VECTORS_DIR — the console's hashes and ring (server/ui/hash.js, ring.js) against the
// golden vectors the C library must match: every hash, each ring's first points, fingerprint, key
// owners and shares, ketama's point counts, a ring built in two parts, and the moving arcs of two rings (ringdraw.js) against
// the plans' transfers, and each plan's ring after derived from its ring before. Run by node, no browser. Exits 1 on any failure.
"use strict";
const fs = require("fs");
const path = require("path");
global.rkHash = require("../../server/ui/hash.js").rkHash;
global.rkRing = require("../../server/ui/ring.js").rkRing;
const { rkDraw } = require("../../server/ui/ringdraw.js");

const dir = process.argv[2];
const failures = [];
let passed = 0;
const check = (name, ok, detail) => (ok ? passed++ : failures.push(`${name}: ${detail}`));
const bytes = (s) => new TextEncoder().encode(s);

function hashes() {
  for (const line of fs.readFileSync(path.join(dir, "hashes.tsv"), "utf8").split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const [alg, quoted, want] = line.split("\t"), b = bytes(JSON.parse(quoted)), hi = [0], lo = [0];
    rkHash[alg](b, b.length, hi, lo, 0);
    const got = rkRing.hex(hi[0], lo[0]).slice(alg === "xxh3_64" ? 0 : 8);
    check(`${alg}(${quoted.slice(0, 20)})`, got === want, `${got}, want ${want}`);
  }
}

// The hash of a key as the ring compares it: hi, lo.
function keyHash(alg, key) {
  const b = bytes(key), hi = [0], lo = [0];
  rkHash[alg](b, b.length, hi, lo, 0);
  return [hi[0], lo[0]];
}

function rings() {
  for (const v of JSON.parse(fs.readFileSync(path.join(dir, "rings.json"), "utf8"))) {
    const r = rkRing.build(v.topology), name = v.name;
    check(`${name}: points`, r.n === v.points, `${r.n} vs ${v.points}`);
    check(`${name}: fingerprint`, rkRing.fingerprint(r) === v.fingerprint, rkRing.fingerprint(r));
    v.first_points.forEach((p, i) => {
      const got = { position: rkRing.hex(r.hi[i], r.lo[i]), node: r.ids[r.node[i]] };
      check(`${name}: point ${i}`, got.position === p.position && got.node === p.node, JSON.stringify(got));
    });
    for (const l of v.lookups) {
      const got = rkRing.arc(r, rkRing.owner(r, ...keyHash(v.topology.hash, l.key))).node;
      check(`${name}: owner of ${JSON.stringify(l.key)}`, got === l.node, `${got} vs ${l.node}`);
    }
    const space = 2 ** r.bits, share = {};
    for (let i = 0; i < r.n; i++) {
      const a = rkRing.arc(r, i), size = (parseInt(a.last, 16) - parseInt(a.first, 16) + 1 + space) % space;
      share[a.node] = (share[a.node] || 0) + size / space;
    }
    for (const [id, want] of Object.entries(v.shares))
      check(`${name}: share of ${id}`, Math.abs((share[id] || 0) - want) < 1e-6, `${share[id]} vs ${want}`);
  }
}

function ketama() {
  for (const c of JSON.parse(fs.readFileSync(path.join(dir, "ketama.json"), "utf8")).cases) {
    const r = rkRing.build(c.topology), counts = {};
    for (let i = 0; i < r.n; i++) counts[r.ids[r.node[i]]] = (counts[r.ids[r.node[i]]] || 0) + 1;
    for (const [id, want] of Object.entries(c.points))
      check(`ketama ${c.name}: points of ${id}`, (counts[id] || 0) === want, `${counts[id]} vs ${want}`);
  }
}

// The arcs that move between each plan's two rings, summed per (from, to), against its transfers.
function plans() {
  for (const p of JSON.parse(fs.readFileSync(path.join(dir, "plans.json"), "utf8"))) {
    const a = rkRing.build(p.from), b = rkRing.build(p.to), derived = rkRing.derive(a, p.from, p.to);
    check(`plan ${p.name}: the ring after derived from the ring before`, rkRing.fingerprint(derived) === rkRing.fingerprint(b), "differs");
    const ids = [...new Set([...a.ids, ...b.ids])].sort();
    const map = (r) => Uint32Array.from(r.ids, (id) => ids.indexOf(id));
    const arcs = rkDraw.movingArcs({ a, b, mapA: map(a), mapB: map(b), ids }), got = {};
    let moved = 0;
    for (const x of arcs) {
      const f = Number(BigInt("0x" + x.last) - BigInt("0x" + x.first) + 1n) / 2 ** a.bits, t = (got[`${x.from}>${x.to}`] ||= { fraction: 0, arcs: 0 });
      t.fraction += f, t.arcs++, moved += f;
    }
    check(`plan ${p.name}: moved`, Math.abs(moved - p.moved_fraction) < 1e-9, `${moved} vs ${p.moved_fraction}`);
    check(`plan ${p.name}: pairs`, Object.keys(got).length === p.transfers.length, Object.keys(got).join(" "));
    for (const t of p.transfers) {
      const g = got[`${t.from}>${t.to}`] || {};
      check(`plan ${p.name}: ${t.from} -> ${t.to}`, (t.arcs === undefined || g.arcs === t.arcs) && Math.abs(g.fraction - t.fraction) < 1e-9, JSON.stringify(g));
    }
  }
}

// A ring built in two parts merged (as two workers build it) is the ring built at once, ties at
// one position included: 1000000 fnv1a_32 points hold about a hundred.
function parts() {
  const doc = { hash: "fnv1a_32", vnode_factor: 10, nodes: Array.from({ length: 100000 }, (_, k) => ({ id: `n${k}`, weight: 1 })) };
  const whole = rkRing.build(doc), l = rkRing.layout(doc), k = rkRing.halfway(l);
  const merged = rkRing.merge(l, [rkRing.part(rkRing.partSpec(l, l.order.slice(0, k))), rkRing.part(rkRing.partSpec(l, l.order.slice(k)))]);
  let ties = 0;
  for (let i = 1; i < whole.n; i++) ties += whole.lo[i] === whole.lo[i - 1];
  check("two parts merged: the same ring", rkRing.fingerprint(merged) === rkRing.fingerprint(whole) && k > 0 && k < l.order.length, `split at ${k}`);
  check("two parts merged: with ties", ties > 0 && whole.node.every((x, i) => merged.node[i] === x), `${ties} ties`);
}

// Ids in UTF-8 byte order, where UTF-16 (JavaScript's string order) would put U+1F600 before U+FFFD.
function idOrder() {
  const ranks = rkRing.idRanks({ ids: ["b", "\u{1F600}", "\uFFFD", "a", "ab"] });
  check("ids in byte order", [...ranks].join() === "2,4,3,0,1", [...ranks].join());
}

hashes();
idOrder();
rings();
parts();
ketama();
plans();
for (const f of failures) console.log("FAIL: " + f);
console.log(`${passed} passed, ${failures.length} failed`);
process.exit(failures.length || !passed ? 1 : 0);
