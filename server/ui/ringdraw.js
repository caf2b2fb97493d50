/* ringdraw.js — the ring pictures of the console: one ring, or a plan's two rings with the moving
 * arcs between them, drawn on one canvas whatever the ring's size. The server computes each
 * circle with the library (GET .../picture, .../plan?format=picture): equal bins, each in the
 * colour of its longest stretch, so a 4M-point ring is at most a few thousand strokes and never
 * one DOM node per point. What the pointer or the keyboard is on is asked of the server too (GET
 * .../arc?hash=H, the exact arc), or for the moving arcs looked up in the plan's own arc list:
 * nothing here knows how a ring is built. */
"use strict";

const rkDraw = (() => {
  const SIZE = 560; /* the canvas, CSS pixels */
  const REST_MS = 80; /* the pointer rests this long before its arc is asked for */

  /* node_colour() of plan_svg.c: a node's colour from its id alone (FNV-1a of its UTF-8 bytes into
   * Paul Tol's colour-blind-safe "muted" palette and one orange), the same in every view and version. */
  const PALETTE = ["#cc6677", "#332288", "#ddcc77", "#117733", "#88ccee", "#882255", "#44aa99", "#999933", "#aa4499", "#ee7733"];
  const OTHERS = "#bbbbbb"; /* the "others" group of the top-N views: no node's colour */
  const utf8 = new TextEncoder();
  function colour(id) {
    let h = 2166136261;
    for (const b of utf8.encode(id)) h = Math.imul(h ^ b, 16777619) >>> 0;
    return PALETTE[h % PALETTE.length];
  }

  /* The bins of a circle from the server's runs ([count, rank or null]): rank per bin, -1 empty. */
  function bins(runs) {
    const out = new Int32Array(runs.reduce((s, [n]) => s + n, 0));
    let at = 0;
    for (const [n, rank] of runs) out.fill(rank === null ? -1 : rank, at, (at += n));
    return out;
  }

  /* ---- hash values: BigInt, as the API writes them (16 hex digits) ---- */

  const big = (hex) => BigInt("0x" + hex);
  const hex = (v) => v.toString(16).padStart(16, "0");
  const frac = (bits, v) => Number(v) / 2 ** bits;

  /* The hash value at fraction f of a space of 2^bits values. */
  function hashAt(bits, f) {
    const top = (1n << BigInt(bits)) - 1n, v = BigInt(Math.floor(Math.max(0, f) * 2 ** bits));
    return v > top ? top : v;
  }

  /* v + d in a space of 2^bits values, wrapping. */
  function add(bits, v, d) {
    const space = 1n << BigInt(bits);
    return (((v + d) % space) + space) % space;
  }

  /* ---- what a circle holds at a hash value ---- */

  /* The arc of a ring circle at hash value v, as the server says: a cursor; throws when the
   * server does not answer it (the box says so). */
  async function ringArc(layer, v) {
    const r = await fetch(`${layer.arcs}?hash=${hex(v)}`);
    if (r.status !== 200) throw new Error(`the arc at ${hex(v)}: HTTP ${r.status}`);
    const a = await r.json(), f0 = frac(layer.bits, big(a.first)), f1 = frac(layer.bits, big(a.last) + 1n);
    return { layer, arc: a, colour: colour(a.owner), f0, f1: f1 <= f0 ? f1 + 1 : f1 }; /* the arc round zero ends past 1 */
  }

  /* The moving arcs as BigInt bounds, made once per circle. */
  function bounds(layer) {
    layer.bounds ||= layer.moves.map((a) => [big(a.first), big(a.last)]);
    return layer.bounds;
  }

  function moveCursor(layer, i) {
    const a = layer.moves[i], [lo, hi] = bounds(layer)[i];
    return { layer, index: i, arc: a, colour: colour(a.to), f0: frac(layer.bits, lo), f1: frac(layer.bits, hi + 1n) };
  }

  /* The index of the first moving arc whose last value is at least v (the arcs are sorted and
   * disjoint), the count when none is. */
  function firstFrom(layer, v) {
    const b = bounds(layer);
    let lo = 0, hi = b.length;
    while (lo < hi) {
      const m = (lo + hi) >> 1;
      if (b[m][1] < v) lo = m + 1;
      else hi = m;
    }
    return lo;
  }

  /* The moving arc drawn in the bin at fraction f: the one overlapping it most; null if none. */
  function moveInBin(layer, f) {
    const n = layer.bins.length, k = Math.min(n - 1, Math.floor(f * n));
    const lo = hashAt(layer.bits, k / n), hi = hashAt(layer.bits, (k + 1) / n), b = bounds(layer);
    let best = -1, size = -1n;
    for (let i = firstFrom(layer, lo); i < b.length && b[i][0] <= hi; i++) {
      const s = (b[i][1] < hi ? b[i][1] : hi) - (b[i][0] > lo ? b[i][0] : lo);
      if (s > size) best = i, size = s;
    }
    return best < 0 ? null : moveCursor(layer, best);
  }

  /* The arc at fraction f of a circle; for the moving arcs, the one drawn there or else the next. */
  async function near(layer, f) {
    if (!layer.moves) return ringArc(layer, hashAt(layer.bits, f));
    if (!layer.moves.length) return null;
    return moveInBin(layer, f) || moveCursor(layer, firstFrom(layer, hashAt(layer.bits, f)) % layer.moves.length);
  }

  /* The next (dir 1) or previous (-1) arc of the cursor's circle: the arc at last + 1 or at
   * first - 1, as the server says, or the next of the plan's arcs. */
  async function step(cur, dir) {
    const layer = cur.layer;
    if (layer.moves) return moveCursor(layer, (cur.index + dir + layer.moves.length) % layer.moves.length);
    return ringArc(layer, add(layer.bits, big(dir > 0 ? cur.arc.last : cur.arc.first), BigInt(dir)));
  }

  /* ---- the picture: a canvas of the circles, an overlay marking the arc looked at, and a box
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
    const b = layer.bins, n = b.length;
    for (let k = 0; k < n;) {
      let e = k + 1;
      while (e < n && b[e] === b[k]) e++;
      if (b[k] >= 0) stroke(ctx, layer.radius, layer.width, k / n, e / n, colour(layer.ids[b[k]]));
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

  const pct = (x) => (100 * x).toFixed(4) + "%";

  function describe(box, cur) {
    const a = cur.arc;
    box.replaceChildren();
    const line = (text) => box.append(Object.assign(document.createElement("div"), { textContent: text }));
    line(cur.layer.label);
    line(`${a.first} … ${a.last}`);
    for (const k of Object.keys(box.dataset)) if (k !== "pending") delete box.dataset[k];
    if (cur.layer.moves) {
      line(`moves ${a.from} → ${a.to}`);
      Object.assign(box.dataset, { first: a.first, last: a.last, from: a.from, to: a.to, layer: cur.layer.label });
    } else {
      line(`owner ${a.owner}, ${pct(a.share)} of the ring`);
      Object.assign(box.dataset, { first: a.first, last: a.last, owner: a.owner, share: String(a.share), at: a.at, layer: cur.layer.label });
    }
  }

  /* The circle under a mouse event and the fraction of the space there, or null off the circles. */
  function pointed(layers, ev) {
    const x = ev.offsetX - C, y = ev.offsetY - C, rho = Math.hypot(x, y);
    const layer = layers.find((l) => Math.abs(rho - l.radius) <= l.width / 2 + 3);
    return layer ? { layer, f: ((Math.atan2(y, x) + Math.PI / 2 + TAU) % TAU) / TAU } : null;
  }

  /* Where each key moves the cursor: left and right along its circle, up and down to the next
   * circle at the same angle, Home to the top. */
  const KEYS = {
    ArrowRight: (layers, cur) => step(cur, 1),
    ArrowLeft: (layers, cur) => step(cur, -1),
    Home: (layers, cur) => near(cur.layer, 0),
    ArrowUp: (layers, cur) => near(layers[Math.max(0, layers.indexOf(cur.layer) - 1)], middle(cur)),
    ArrowDown: (layers, cur) => near(layers[Math.min(layers.length - 1, layers.indexOf(cur.layer) + 1)], middle(cur)),
  };
  const middle = (cur) => ((cur.f0 + cur.f1) / 2) % 1;

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

  /* What the box shows, asked for one at a time: each new question replaces the one waiting, and
   * an answer that comes after a newer question is dropped. box.dataset.pending is set while one
   * is open (for the tests). */
  function asker(box, show) {
    let asked = 0, timer = 0;
    const done = (n) => n === asked && delete box.dataset.pending;
    return (question, delay, x, y) => {
      const n = ++asked;
      clearTimeout(timer);
      box.dataset.pending = "1";
      timer = setTimeout(() => question().then((c) => n === asked && show(c, x, y),
        (e) => n === asked && Object.assign(box, { hidden: false, textContent: e.message })).finally(() => done(n)), delay);
    };
  }

  /* The keydown handler of a picture: each key steps from where the keys before it led, so quick
   * presses queue rather than replace each other; the box shows where the last one leads. */
  function stepper(layers, current, ask) {
    let queued = null;
    return (ev) => {
      if (!KEYS[ev.key]) return;
      ev.preventDefault();
      const from = (queued || Promise.resolve(current())).catch(() => current());
      const to = from.then(async (c) => {
        const at = c || (await near(layers[0], 0));
        return at && ((await KEYS[ev.key](layers, at)) || at);
      });
      queued = to;
      to.finally(() => queued === to && (queued = null)).catch(() => {});
      ask(() => to, 0);
    };
  }

  /* A picture of the layers: [{label, radius, width, bits, bins, ids: rank -> node id, arcs: the
   * version's arc URL} | {label, radius, width, bits, bins, ids, moves: the plan's arcs or []}]:
   * the canvas, an overlay for the arc looked at, and the box saying what it is (role status, so a
   * screen reader says it too). */
  function picture(layers, label) {
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
    const ask = asker(box, (c, x, y) => mark(over, box, (cur = c), x, y));
    base.addEventListener("mousemove", (ev) => {
      const p = pointed(layers, ev);
      ask(async () => p && near(p.layer, p.f), REST_MS, ev.offsetX, ev.offsetY);
    });
    base.addEventListener("mouseleave", () => document.activeElement !== base && ask(async () => null, 0));
    base.addEventListener("focus", () => ask(async () => cur || near(layers[0], 0), 0));
    base.addEventListener("blur", () => ask(async () => null, 0));
    base.addEventListener("keydown", stepper(layers, () => cur, ask));
    return wrap;
  }

  return { colour, OTHERS, bins, picture };
})();

if (typeof module !== "undefined") module.exports = { rkDraw };
