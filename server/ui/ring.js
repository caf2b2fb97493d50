/* ring.js — a version's ring rebuilt in the browser from its document (SPEC section 2, and section
 * 8 for ketama), so the console can draw every arc and say which one is under the pointer. The
 * server sends topologies, not points; the ring is checked against the server's by its fingerprint
 * (rkRing.fingerprint), so a browser that got it wrong says so instead of drawing a wrong ring.
 * Positions are 64-bit, kept as two Uint32Arrays (hi, lo) in ring order, with the owner of each
 * point in a third: a 4M-point ring is 48 MB, never one object per point. */
"use strict";

const rkRing = (() => {
  const encoder = new TextEncoder();
  const KETAMA_POINTS = 160; /* ketama's points per server on average: 40 digests of 4 */

  function compareBytes(a, b) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
    return a.length - b.length;
  }

  /* Indexes of ids in the ring's tie order: by UTF-8 bytes, or by byte length first (ketama). For
   * ASCII ids the strings compare as their bytes, without encoding 100000 ids. */
  function idOrder(ids, lengthFirst) {
    const order = ids.map((_, k) => k);
    if (ids.every((id) => /^[\x00-\x7f]*$/.test(id)))
      return order.sort((a, b) => (lengthFirst && ids[a].length - ids[b].length) || (ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : 0));
    const bytes = ids.map((id) => encoder.encode(id));
    return order.sort((a, b) => (lengthFirst && bytes[a].length - bytes[b].length) || compareBytes(bytes[a], bytes[b]));
  }

  /* Per node, its point count: vnode_factor * weight, or ketama's single-precision formula. */
  function pointCounts(doc) {
    const nodes = doc.nodes;
    if (doc.scheme !== "ketama") return nodes.map((n) => doc.vnode_factor * n.weight);
    const live = nodes.filter((n) => n.weight > 0).length, total = nodes.reduce((s, n) => s + n.weight, 0);
    const f = Math.fround;
    return nodes.map((n) => n.weight && Math.floor(f(f(f(f(n.weight / total) * KETAMA_POINTS) / 4) * live)) * 4);
  }

  /* Writes the decimal digits of v into buf at o; returns the length written. */
  function putDecimal(buf, o, v) {
    const s = String(v);
    for (let i = 0; i < s.length; i++) buf[o + i] = s.charCodeAt(i);
    return s.length;
  }

  /* Adds one to the len decimal digits at buf[o]; returns their new length. Cheaper than
   * String(i) for each of millions of point names. */
  function increment(buf, o, len) {
    let i = o + len - 1;
    for (; i >= o && buf[i] === 0x39; i--) buf[i] = 0x30;
    if (i >= o) {
      buf[i]++;
      return len;
    }
    buf[o] = 0x31, buf[o + len] = 0x30;
    return len + 1;
  }

  /* Places the points of node k (global index; its id's bytes `id`) at p.hi/p.lo/p.node from
   * index at: H("<id>#<i>"), or ketama's MD5 words of "<id>-<j>". */
  function placeNode(p, id, k, count, at) {
    const buf = new Uint8Array(id.length + 12);
    buf.set(id);
    if (p.scheme !== "ketama") {
      const hash = rkHash[p.hash];
      buf[id.length] = 0x23; /* '#' */
      for (let i = 0, digits = putDecimal(buf, id.length + 1, 0); i < count; i++) {
        hash(buf, id.length + 1 + digits, p.hi, p.lo, at + i);
        p.node[at + i] = k;
        digits = increment(buf, id.length + 1, digits);
      }
      return;
    }
    buf[id.length] = 0x2d; /* '-' */
    for (let j = 0; j < count / 4; j++) {
      const words = rkHash.md5(buf, id.length + 1 + putDecimal(buf, id.length + 1, j));
      for (let w = 0; w < 4; w++, at++) p.hi[at] = 0, p.lo[at] = words[w], p.node[at] = k;
    }
  }

  /* Stable sort by position of the points in [s, e) of r's arrays: insertion sort, as a bucket of
   * sortRun holds a few points; a crowded one (a hash that clusters) gets the engine's merge sort. */
  function sortBucket(r, s, e) {
    const { hi, lo, node } = r;
    if (e - s > 64) {
      const idx = Array.from({ length: e - s }, (_, i) => s + i).sort((a, b) => hi[a] - hi[b] || lo[a] - lo[b]);
      const copy = [hi.slice(s, e), lo.slice(s, e), node.slice(s, e)];
      idx.forEach((from, i) => { hi[s + i] = copy[0][from - s], lo[s + i] = copy[1][from - s], node[s + i] = copy[2][from - s]; });
      return;
    }
    for (let i = s + 1; i < e; i++) {
      const h = hi[i], l = lo[i], k = node[i];
      let j = i - 1;
      for (; j >= s && (hi[j] > h || (hi[j] === h && lo[j] > l)); j--) hi[j + 1] = hi[j], lo[j + 1] = lo[j], node[j + 1] = node[j];
      hi[j + 1] = h, lo[j + 1] = l, node[j + 1] = k;
    }
  }

  /* Sorts the points by position, stably, so points placed in tie order stay in it. Two passes
   * that each write where the cache is, as one pass to 4M random places took 0.5 s: by the top 8
   * bits of the position into 256 runs (hi, lo and node interleaved), then sortRun. */
  function sortPoints(r) {
    const n = r.n, key = r.bits === 32 ? r.lo : r.hi, run = new Uint32Array(257);
    for (let i = 0; i < n; i++) run[(key[i] >>> 24) + 1]++;
    for (let d = 1; d <= 256; d++) run[d] += run[d - 1];
    const x = new Uint32Array(3 * n), fill = run.slice();
    for (let i = 0; i < n; i++) {
      const j = 3 * fill[key[i] >>> 24]++;
      x[j] = r.hi[i], x[j + 1] = r.lo[i], x[j + 2] = r.node[i];
    }
    for (let d = 0; d < 256; d++) sortRun(r, x, run[d], run[d + 1], r.bits === 32 ? 1 : 0);
  }

  /* One run [s, e) of x, by the next bits of its key word w into buckets of about 4 points,
   * written back into r's arrays; then each bucket by insertion. */
  function sortRun(r, x, s, e, w) {
    const bits = Math.min(16, Math.max(1, Math.ceil(Math.log2((e - s) / 4 + 1)))), shift = 24 - bits, mask = (1 << bits) - 1;
    const start = new Uint32Array(mask + 2);
    for (let i = s; i < e; i++) start[((x[3 * i + w] >>> shift) & mask) + 1]++;
    for (let d = 1; d <= mask + 1; d++) start[d] += start[d - 1];
    const fill = start.slice();
    for (let i = s; i < e; i++) {
      const j = s + fill[(x[3 * i + w] >>> shift) & mask]++;
      r.hi[j] = x[3 * i], r.lo[j] = x[3 * i + 1], r.node[j] = x[3 * i + 2];
    }
    for (let d = 0; d <= mask; d++)
      if (start[d + 1] - start[d] > 1) sortBucket(r, s + start[d], s + start[d + 1]);
  }

  /* What placing a ring's points needs from its version document: the nodes in tie order (by id
   * bytes; ketama by id length first: SPEC sections 2 and 8) and their point counts. */
  function layout(doc) {
    const ketama = doc.scheme === "ketama", ids = doc.nodes.map((n) => n.id), counts = pointCounts(doc);
    const bits = ketama ? 32 : rkHash.bits[doc.hash];
    if (!bits) throw new Error(`the console cannot build rings of hash ${doc.hash}`);
    return { scheme: doc.scheme, hash: doc.hash, bits, ids, counts, order: idOrder(ids, ketama), n: counts.reduce((s, c) => s + c, 0) };
  }

  /* One part of a ring, sorted: the points of nodes `index` (global indexes, in tie order) with
   * their ids and point counts. A worker (ringworker.js) builds one from a message. */
  function part({ scheme, hash, bits, index, ids, counts }) {
    const n = counts.reduce((s, c) => s + c, 0);
    const p = { scheme, hash, bits, n, hi: new Uint32Array(n), lo: new Uint32Array(n), node: new Uint32Array(n) };
    for (let j = 0, at = 0; j < index.length; at += counts[j], j++) placeNode(p, encoder.encode(ids[j]), index[j], counts[j], at);
    sortPoints(p);
    return { n, hi: p.hi, lo: p.lo, node: p.node };
  }

  /* The part of layout l of nodes `index` (in tie order), as a message to a worker: ids as
   * strings, which a worker gets far quicker than 50000 byte arrays. */
  function partSpec(l, index) {
    return { scheme: l.scheme, hash: l.hash, bits: l.bits, index, ids: index.map((k) => l.ids[k]), counts: index.map((k) => l.counts[k]) };
  }

  /* The ring of layout l from two parts sorted each: a merge that puts, at one position, the point
   * of the node first in tie order first, as one sort of the whole would. */
  function merge(l, parts) {
    const [a, b] = parts;
    const r = { ids: l.ids, bits: l.bits, n: l.n, hi: a.hi, lo: a.lo, node: a.node };
    if (!b) return r;
    const rank = new Uint32Array(l.ids.length);
    l.order.forEach((k, i) => (rank[k] = i));
    r.hi = new Uint32Array(l.n), r.lo = new Uint32Array(l.n), r.node = new Uint32Array(l.n);
    for (let i = 0, j = 0, o = 0; o < l.n; o++) {
      const c = i >= a.n ? 1 : j >= b.n ? -1 : a.hi[i] - b.hi[j] || a.lo[i] - b.lo[j] || rank[a.node[i]] - rank[b.node[j]];
      const src = c <= 0 ? a : b, k = c <= 0 ? i++ : j++;
      r.hi[o] = src.hi[k], r.lo[o] = src.lo[k], r.node[o] = src.node[k];
    }
    return r;
  }

  /* The ring of version document `doc` from ring r of document `base`: with one hash and
   * vnode_factor, a node of one id and weight has the same points in both, so only new and
   * reweighted nodes are hashed (a plan between two 4M-point versions that differ by ten nodes
   * hashes 400 points, not 4M). null for ketama, whose point counts change with every node. */
  function derive(r, base, doc) {
    if (base.scheme === "ketama" || doc.scheme === "ketama" || base.hash !== doc.hash || base.vnode_factor !== doc.vnode_factor) return null;
    const l = layout(doc), was = new Map(base.nodes.map((n) => [n.id, n.weight]));
    const at = new Map(l.ids.map((id, k) => [id, k])), same = doc.nodes.map((n) => was.get(n.id) === n.weight);
    const keep = Int32Array.from(r.ids, (id) => (same[at.get(id)] ? at.get(id) : -1));
    let n = 0;
    for (let i = 0; i < r.n; i++) n += keep[r.node[i]] >= 0 ? 1 : 0;
    const kept = { n, hi: new Uint32Array(n), lo: new Uint32Array(n), node: new Uint32Array(n) };
    for (let i = 0, o = 0; i < r.n; i++)
      if (keep[r.node[i]] >= 0) kept.hi[o] = r.hi[i], kept.lo[o] = r.lo[i], kept.node[o++] = keep[r.node[i]];
    const fresh = l.order.filter((k) => !same[k]);
    return merge(l, [kept, part(partSpec(l, fresh))]);
  }

  /* The ring of a version document: {ids, bits, n, hi, lo, node}; node indexes doc.nodes. */
  function build(doc) {
    const l = layout(doc);
    return merge(l, [part(partSpec(l, l.order))]);
  }

  /* The index in l's tie order that splits its points in two halves. */
  function halfway(l) {
    let k = 0;
    for (let sum = 0; k < l.order.length && 2 * sum < l.n; k++) sum += l.counts[l.order[k]];
    return k;
  }

  /* build() off the page's thread, in two workers at once when the ring is big: the page stays
   * responsive and both cores hash. Falls back to build() where workers fail or do not exist. */
  async function buildAsync(doc) {
    const l = layout(doc);
    if (typeof Worker === "undefined" || l.n < 200000) return build(doc);
    const k = halfway(l);
    const run = (spec) => new Promise((resolve, reject) => {
      const w = new Worker("ringworker.js");
      w.onmessage = (ev) => resolve(ev.data);
      w.onerror = (ev) => reject(new Error(ev.message));
      w.postMessage(spec);
    });
    try {
      return merge(l, await Promise.all([run(partSpec(l, l.order.slice(0, k))), run(partSpec(l, l.order.slice(k)))]));
    } catch (e) {
      return build(doc);
    }
  }

  /* Per node of r, its rank in id byte order: its index among a plan's nodes when the plan is
   * between this version and itself. */
  function idRanks(r) {
    const rank = new Uint32Array(r.ids.length);
    idOrder(r.ids, false).forEach((k, i) => (rank[k] = i));
    return rank;
  }

  /* The ring fingerprint of SPEC section 2: XXH3 over the ids in byte order, then per point its
   * position and its node's rank in that order. */
  function fingerprint(r) {
    const rank = idRanks(r), order = new Uint32Array(rank.length);
    rank.forEach((i, k) => (order[i] = k));
    const bytes = r.ids.map((id) => encoder.encode(id)), buf = new Uint8Array(bytes.reduce((s, b) => s + b.length + 1, 12 * r.n));
    let o = 0;
    for (const k of order) {
      buf.set(bytes[k], o);
      o += bytes[k].length + 1;
    }
    const view = new DataView(buf.buffer);
    for (let i = 0; i < r.n; i++, o += 12) {
      view.setUint32(o, r.lo[i], true);
      view.setUint32(o + 4, r.hi[i], true);
      view.setUint32(o + 8, rank[r.node[i]], true);
    }
    const hi = [0], lo = [0];
    rkHash.xxh3_64(buf, buf.length, hi, lo, 0);
    return hex(hi[0], lo[0]);
  }

  function hex(hi, lo) {
    return hi.toString(16).padStart(8, "0") + lo.toString(16).padStart(8, "0");
  }

  /* The index of the first point at or after position hi:lo, n when there is none. */
  function after(r, hi, lo) {
    let a = 0, b = r.n;
    while (a < b) {
      const m = (a + b) >>> 1;
      if (r.hi[m] < hi || (r.hi[m] === hi && r.lo[m] < lo)) a = m + 1;
      else b = m;
    }
    return a;
  }

  /* Position + 1 in a space of 2^bits values, wrapping to 0. */
  function next(bits, hi, lo) {
    if (lo !== 0xffffffff) return [hi, lo + 1];
    return bits === 32 || hi === 0xffffffff ? [0, 0] : [hi + 1, 0];
  }

  /* The arc of point i: the hash values it owns, from the previous point's position + 1 to its
   * own (the first point's arc wraps around zero). */
  function arc(r, i) {
    const p = (i + r.n - 1) % r.n, [fh, fl] = next(r.bits, r.hi[p], r.lo[p]);
    return { point: i, first: hex(fh, fl), last: hex(r.hi[i], r.lo[i]), node: r.ids[r.node[i]] };
  }

  /* The point whose arc holds hash value hi:lo. */
  function owner(r, hi, lo) {
    return after(r, hi, lo) % r.n;
  }

  return { build, buildAsync, derive, part, partSpec, layout, merge, halfway, fingerprint, idRanks, arc, owner, after, next, hex };
})();

if (typeof module !== "undefined") module.exports = { rkRing };
