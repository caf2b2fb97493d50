/* ringdraw.js — the ring pictures of the console: one ring, or a plan's two rings with the moving
 * arcs between them, drawn on one canvas whatever the ring's size. Each circle is cut into BINS
 * equal bins, each drawn in the colour of its longest stretch (as client/src/plan_svg.c does), so
 * arcs below a pixel merge into their neighbours and a 4M-point ring is at most BINS strokes and
 * never one DOM node per point. What the pointer or the keyboard is on is looked up exactly in
 * the rings (ring.js): the arc's range, owner and share, or the moving arc's from and to. */
"use strict";

const rkDraw = (() => {
  const BINS = 2880; /* an eighth of a degree: under a pixel on the drawn circles */
  const SIZE = 560; /* the canvas, CSS pixels */

  /* node_colour() of plan_svg.c: hues a golden angle apart in two lightnesses, by plan node index. */
  function colour(k) {
    const h = ((k * 137.50776405) % 360) / 60, l = k % 2 ? 0.4 : 0.55, s = 0.7;
    const c = (1 - Math.abs(2 * l - 1)) * s, x = c * (1 - Math.abs((h % 2) - 1)), m = l - c / 2;
    const v = [[c, x, 0], [x, c, 0], [0, c, x], [0, x, c], [x, 0, c], [c, 0, x]][Math.floor(h) % 6];
    return "#" + v.map((y) => Math.round((y + m) * 255).toString(16).padStart(2, "0")).join("");
  }

  /* ---- positions: 64-bit values as (hi, lo); a ring's "point -1" is before 0 and "point n"
   * is the last hash value, so every segment between two cuts is (cut, cut] ---- */

  function frac(r, hi, lo) {
    return (hi * 4294967296 + lo) * (r.bits === 32 ? 2 ** -32 : 2 ** -64);
  }

  /* Point i of ring a against point j of ring b by position (negative, 0, positive); index -1 is
   * before every point and index n past every point, as the ends of the hash space. */
  function cmp(a, i, b, j) {
    if (i < 0 || j < 0) return (i < 0 ? -1 : 0) - (j < 0 ? -1 : 0);
    if (i >= a.n || j >= b.n) return (i >= a.n ? 1 : 0) - (j >= b.n ? 1 : 0);
    return a.hi[i] - b.hi[j] || a.lo[i] - b.lo[j];
  }

  const last = (bits) => (bits === 32 ? [0, 0xffffffff] : [0xffffffff, 0xffffffff]);

  /* ---- the overlay of two rings (a plan): segments between consecutive cuts of either ring ---- */

  /* The segment holding hash value hi:lo: {ia, ib}, the points of a and b that end it or wrap. */
  function segmentAt(a, b, hi, lo) {
    return { ia: rkRing.after(a, hi, lo), ib: rkRing.after(b, hi, lo) };
  }

  /* Its end: the index (in a or b) of the point that ends it, or past the last point. */
  function segEnd(a, b, s) {
    const c = cmp(a, s.ia, b, s.ib);
    return c <= 0 ? [a, s.ia] : [b, s.ib];
  }

  function segStart(a, b, s) {
    const c = cmp(a, s.ia - 1, b, s.ib - 1);
    return c >= 0 ? [a, s.ia - 1] : [b, s.ib - 1];
  }

  /* Whether s holds no hash value: two points of one ring at the same position. */
  function empty(a, b, s) {
    const [rs, is] = segStart(a, b, s), [re, ie] = segEnd(a, b, s);
    return is >= 0 && ie < re.n && rs.hi[is] === re.hi[ie] && rs.lo[is] === re.lo[ie];
  }

  /* The next segment after s, or null at the end of the hash space (arcs never wrap). */
  function forward(a, b, s) {
    do {
      if (s.ia >= a.n && s.ib >= b.n) return null;
      const c = cmp(a, s.ia, b, s.ib);
      s = { ia: s.ia + (c <= 0 ? 1 : 0), ib: s.ib + (c >= 0 ? 1 : 0) };
    } while (empty(a, b, s));
    return s;
  }

  function backward(a, b, s) {
    do {
      if (s.ia <= 0 && s.ib <= 0) return null;
      const c = cmp(a, s.ia - 1, b, s.ib - 1);
      s = { ia: s.ia - (c >= 0 ? 1 : 0), ib: s.ib - (c <= 0 ? 1 : 0) };
    } while (empty(a, b, s));
    return s;
  }

  /* The owners of a segment, as plan node indexes (map* translate ring node to plan node). */
  function owners(v, s) {
    return [v.mapA[v.a.node[s.ia % v.a.n]], v.mapB[v.b.node[s.ib % v.b.n]]];
  }

  /* Segment s as fractions of the space [f0, f1), for drawing. */
  function span(a, b, s) {
    const [rs, is] = segStart(a, b, s), [re, ie] = segEnd(a, b, s);
    return [is < 0 ? 0 : frac(rs, rs.hi[is], rs.lo[is]), ie >= re.n ? 1 : frac(re, re.hi[ie], re.lo[ie])];
  }

  /* Segment s's first and last hash values, 16 hex digits each. */
  function range(a, b, s) {
    const [rs, is] = segStart(a, b, s), [re, ie] = segEnd(a, b, s);
    const first = is < 0 ? [0, 0] : rkRing.next(a.bits, rs.hi[is], rs.lo[is]);
    return [rkRing.hex(...first), ie >= re.n ? rkRing.hex(...last(a.bits)) : rkRing.hex(re.hi[ie], re.lo[ie])];
  }

  /* The moving arc holding segment s, merged over neighbours with the same (from, to), as the
   * plan's arcs are: {first, last, from, to}, with dest (to's plan index) and the span f0..f1 for
   * drawing; null when s does not move. */
  function movingArc(v, s) {
    const [from, to] = owners(v, s);
    if (from === to) return null;
    const same = (t) => t && owners(v, t)[0] === from && owners(v, t)[1] === to;
    let lo = s, hi = s;
    for (let t = backward(v.a, v.b, lo); same(t); t = backward(v.a, v.b, t)) lo = t;
    for (let t = forward(v.a, v.b, hi); same(t); t = forward(v.a, v.b, t)) hi = t;
    return { first: range(v.a, v.b, lo)[0], last: range(v.a, v.b, hi)[1], from: v.ids[from], to: v.ids[to], dest: to,
      f0: span(v.a, v.b, lo)[0], f1: span(v.a, v.b, hi)[1] };
  }

  /* Calls visit(from, to, sh, sl, eh, el) for each segment of the overlay of v's two rings whose
   * owners (plan node indexes) differ: the hash values (sh:sl, eh:el], sh = -1 from zero and eh = -1
   * to the end of the space. One pass over both rings, no object per segment: two 4M-point rings
   * have 8M segments. Empty segments (two points of one ring at one position) are skipped. */
  function overlay(v, visit) {
    const { a, b, mapA, mapB } = v, [endH, endL] = last(a.bits);
    let i = 0, j = 0, ph = -1, pl = 0;
    while (i < a.n || j < b.n) {
      const c = i >= a.n ? 1 : j >= b.n ? -1 : a.hi[i] - b.hi[j] || a.lo[i] - b.lo[j];
      const eh = c <= 0 ? a.hi[i] : b.hi[j], el = c <= 0 ? a.lo[i] : b.lo[j];
      const from = mapA[a.node[i < a.n ? i : 0]], to = mapB[b.node[j < b.n ? j : 0]];
      if (from !== to && (eh !== ph || el !== pl)) visit(from, to, ph, pl, eh, el);
      i += c <= 0 ? 1 : 0;
      j += c >= 0 ? 1 : 0;
      ph = eh, pl = el;
    }
    const from = mapA[a.node[0]], to = mapB[b.node[0]];
    if (from !== to && (ph !== endH || pl !== endL)) visit(from, to, ph, pl, -1, 0);
  }

  /* Every moving arc of a plan's two rings, as the plan lists them: {first, last, from, to}. */
  function movingArcs(v) {
    const arcs = [], bits = v.a.bits;
    overlay(v, (from, to, sh, sl, eh, el) => {
      const open = arcs[arcs.length - 1];
      if (open && open.eh === sh && open.el === sl && open.from === from && open.to === to) open.eh = eh, open.el = el;
      else arcs.push({ from, to, sh, sl, eh, el });
    });
    return arcs.map((x) => ({ first: rkRing.hex(...(x.sh < 0 ? [0, 0] : rkRing.next(bits, x.sh, x.sl))),
      last: rkRing.hex(...(x.eh < 0 ? last(bits) : [x.eh, x.el])), from: v.ids[x.from], to: v.ids[x.to] }));
  }

  /* ---- bins: per bin the plan node of its longest stretch, -1 when empty ---- */

  function binner() {
    const best = new Float64Array(BINS), of = new Int32Array(BINS).fill(-1);
    let node = -1, f0 = 0, f1 = 0;
    const flush = () => {
      for (let k = Math.floor(f0 * BINS); k < BINS && k <= Math.floor(f1 * BINS); k++) {
        const len = Math.min(f1, (k + 1) / BINS) - Math.max(f0, k / BINS);
        if (len > best[k]) best[k] = len, of[k] = node;
      }
    };
    return {
      add(a0, a1, k) { /* a stretch [a0, a1) of node k, in ascending order; k < 0 is a gap */
        if (k === node && a0 <= f1) return void (f1 = a1);
        if (node >= 0) flush();
        node = k, f0 = a0, f1 = a1;
      },
      done() {
        if (node >= 0) flush();
        return of;
      },
    };
  }

  /* The bins of ring r, its nodes coloured as map says. */
  function ringBins(r, map) {
    const bins = binner();
    for (let i = 0, f = 0; i <= r.n; i++) {
      const g = i < r.n ? frac(r, r.hi[i], r.lo[i]) : 1;
      bins.add(f, g, map[r.node[i % r.n]]);
      f = g;
    }
    return bins.done();
  }

  /* The bins of the moving stretches of a plan, coloured by destination. */
  function moveBins(v) {
    const bins = binner(), r = v.a;
    overlay(v, (from, to, sh, sl, eh, el) => bins.add(sh < 0 ? 0 : frac(r, sh, sl), eh < 0 ? 1 : frac(r, eh, el), to));
    return bins.done();
  }

  /* ---- the picture: a canvas of the layers, an overlay marking the arc looked at, and a box
   * saying what it is ---- */

  const C = SIZE / 2, TAU = 2 * Math.PI;

  function angle(f) {
    return TAU * f - Math.PI / 2;
  }

  function stroke(ctx, radius, width, f0, f1, style) {
    ctx.lineWidth = width;
    ctx.strokeStyle = style;
    ctx.beginPath();
    ctx.arc(C, C, radius, angle(f0), angle(f1));
    ctx.stroke();
  }

  function drawBins(ctx, layer) {
    const bins = layer.bins;
    for (let k = 0; k < BINS;) {
      let e = k + 1;
      while (e < BINS && bins[e] === bins[k]) e++;
      if (bins[k] >= 0) stroke(ctx, layer.radius, layer.width, k / BINS, e / BINS, colour(bins[k]));
      k = e;
    }
  }

  function canvas(cls) {
    const c = document.createElement("canvas"), dpr = window.devicePixelRatio || 1;
    c.className = cls;
    c.width = c.height = SIZE * dpr;
    c.style.width = c.style.height = SIZE + "px";
    c.getContext("2d").scale(dpr, dpr);
    return c;
  }

  function parseHex(h) {
    return [parseInt(h.slice(0, 8), 16), parseInt(h.slice(8), 16)];
  }

  /* The hash value at fraction f of a space of 2^bits values. */
  function hashAt(bits, f) {
    const x = Math.min(f, 1 - 2 ** -52) * 2 ** (bits - 32);
    return bits === 32 ? [0, Math.floor(x * 4294967296) >>> 0] : [Math.floor(x), Math.floor((x % 1) * 4294967296) >>> 0];
  }

  /* What a ring layer shows for its point i. */
  function ringCursor(layer, i) {
    const r = layer.ring, p = (i + r.n - 1) % r.n;
    return { layer, point: i, arc: rkRing.arc(r, i), colour: colour(layer.map[r.node[i]]), f0: i ? frac(r, r.hi[p], r.lo[p]) : 0, f1: frac(r, r.hi[i], r.lo[i]) };
  }

  function moveCursor(layer, s) {
    const arc = movingArc(layer.v, s);
    return arc && { layer, arc, colour: colour(arc.dest), f0: arc.f0, f1: arc.f1 };
  }

  /* The moving arc drawn in bin k: the longest moving segment in it, merged into its arc. */
  function moveInBin(layer, k) {
    const v = layer.v, end = (k + 1) / BINS;
    let best = null, size = 0;
    for (let s = segmentAt(v.a, v.b, ...hashAt(v.a.bits, k / BINS)); s; s = forward(v.a, v.b, s)) {
      const [f0, f1] = span(v.a, v.b, s), [from, to] = owners(v, s);
      if (from !== to && Math.min(f1, end) - Math.max(f0, k / BINS) > size) best = s, size = Math.min(f1, end) - Math.max(f0, k / BINS);
      if (f1 >= end) break;
    }
    return best && moveCursor(layer, best);
  }

  function cursorAt(layer, f) {
    if (layer.v) return moveInBin(layer, Math.min(BINS - 1, Math.floor(f * BINS)));
    return ringCursor(layer, rkRing.owner(layer.ring, ...hashAt(layer.ring.bits, f)));
  }

  /* The first moving arc from segment s on, in direction dir (1 or -1), wrapping once; null when
   * nothing moves. */
  function nextMove(layer, s, dir) {
    const v = layer.v, move = dir > 0 ? forward : backward;
    for (let wraps = 0; wraps < 2; s = move(v.a, v.b, s)) {
      if (!s) {
        s = dir > 0 ? { ia: 0, ib: 0 } : { ia: v.a.n, ib: v.b.n };
        wraps++;
      }
      const [from, to] = owners(v, s);
      if (from !== to) return moveCursor(layer, s);
    }
    return null;
  }

  /* The next (dir 1) or previous (-1) arc of the cursor's circle. */
  function step(cur, dir) {
    const layer = cur.layer, v = layer.v;
    if (!v) return ringCursor(layer, (cur.point + dir + layer.ring.n) % layer.ring.n);
    const s = segmentAt(v.a, v.b, ...parseHex(dir > 0 ? cur.arc.last : cur.arc.first));
    return nextMove(layer, (dir > 0 ? forward : backward)(v.a, v.b, s), dir) || cur;
  }

  /* The arc at fraction f of a circle, or for the moving arcs the next one from there. */
  function near(layer, f) {
    return cursorAt(layer, f) || (layer.v && nextMove(layer, segmentAt(layer.v.a, layer.v.b, ...hashAt(layer.v.a.bits, f)), 1));
  }

  function describe(box, cur) {
    const a = cur.arc, pct = (x) => (100 * x).toFixed(4) + "%";
    box.replaceChildren();
    const line = (text) => box.append(Object.assign(document.createElement("div"), { textContent: text }));
    line(cur.layer.label);
    line(`${a.first} … ${a.last}`);
    if (cur.layer.v) {
      line(`moves ${a.from} → ${a.to}`);
      Object.assign(box.dataset, { first: a.first, last: a.last, from: a.from, to: a.to, layer: cur.layer.label });
    } else {
      const share = cur.layer.share[cur.layer.map[cur.layer.ring.node[cur.point]]]; /* may come later */
      line(`owner ${a.node}` + (share === undefined ? "" : `, ${pct(share)} of the ring`));
      Object.assign(box.dataset, { first: a.first, last: a.last, owner: a.node, share: String(share), layer: cur.layer.label });
    }
    box.hidden = false;
  }

  /* The arc under a mouse event, or null off the circles. */
  function pointed(layers, ev) {
    const x = ev.offsetX - C, y = ev.offsetY - C, rho = Math.hypot(x, y);
    const layer = layers.find((l) => Math.abs(rho - l.radius) <= l.width / 2 + 3);
    return layer ? cursorAt(layer, ((Math.atan2(y, x) + Math.PI / 2 + TAU) % TAU) / TAU) : null;
  }

  /* Where a key moves the cursor: left and right along its circle, up and down to the next circle
   * at the same angle, Home to the top; undefined for other keys. */
  function keyed(layers, cur, key) {
    const i = layers.indexOf(cur.layer), f = (cur.f0 + cur.f1) / 2;
    const moves = { ArrowRight: () => step(cur, 1), ArrowLeft: () => step(cur, -1), Home: () => near(cur.layer, 0) || cur,
      ArrowUp: () => near(layers[Math.max(0, i - 1)], f) || cur, ArrowDown: () => near(layers[Math.min(layers.length - 1, i + 1)], f) || cur };
    return moves[key] && moves[key]();
  }

  /* Marks cursor c on the overlay (outlined, in its own colour: a sub-pixel arc still gets a
   * mark) and says what it is in the box, at x, y or else beside the arc. */
  function mark(over, box, c, x, y) {
    const ctx = over.getContext("2d");
    ctx.clearRect(0, 0, SIZE, SIZE);
    box.hidden = !c;
    if (!c) return;
    const pad = Math.max(0, (0.004 - (c.f1 - c.f0)) / 2), mid = angle((c.f0 + c.f1) / 2);
    stroke(ctx, c.layer.radius, c.layer.width + 8, c.f0 - pad, c.f1 + pad, "#000");
    stroke(ctx, c.layer.radius, c.layer.width + 2, c.f0 - pad, c.f1 + pad, c.colour);
    describe(box, c);
    box.style.left = (x ?? C + (c.layer.radius + 20) * Math.cos(mid)) + 12 + "px";
    box.style.top = (y ?? C + (c.layer.radius + 20) * Math.sin(mid)) + 12 + "px";
  }

  /* A picture of the layers: [{label, radius, width, ring, map, share} | {label, radius, width,
   * v: {a, b, mapA, mapB, ids}}]: the canvas, an overlay for the arc looked at, and the box saying
   * what it is (role status, so a screen reader says it too). */
  function picture(layers, label) {
    for (const l of layers) l.bins = l.v ? moveBins(l.v) : ringBins(l.ring, l.map);
    const base = canvas("ring-base"), over = canvas("ring-over"), box = document.createElement("div");
    const wrap = Object.assign(document.createElement("div"), { className: "ring-box" });
    Object.assign(box, { className: "arc-info", id: "arc-info", hidden: true });
    box.setAttribute("role", "status");
    for (const l of layers) drawBins(base.getContext("2d"), l);
    base.tabIndex = 0;
    base.setAttribute("role", "img");
    base.setAttribute("aria-label", label + ". Arrow keys: left and right step through the arcs, up and down change circle.");
    base.setAttribute("aria-describedby", box.id);
    wrap.append(base, over, box);
    let cur = null;
    const show = (c, x, y) => mark(over, box, (cur = c), x, y);
    base.addEventListener("mousemove", (ev) => show(pointed(layers, ev), ev.offsetX, ev.offsetY));
    base.addEventListener("mouseleave", () => document.activeElement !== base && show(null));
    base.addEventListener("focus", () => show(cur || near(layers[0], 0)));
    base.addEventListener("blur", () => show(null));
    base.addEventListener("keydown", (ev) => {
      const next = keyed(layers, cur || near(layers[0], 0), ev.key); /* the pointer may have left nothing under it */
      if (!next) return;
      ev.preventDefault();
      show(next);
    });
    return wrap;
  }

  return { colour, picture, movingArcs };
})();

if (typeof module !== "undefined") module.exports = { rkDraw };
