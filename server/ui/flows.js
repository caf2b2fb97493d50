/* flows.js — where the keys go, as one picture: a plan's transfers as bands from the nodes that lose
 * keys (left) to the nodes that gain them (right), each band as tall as the share of the hash space it
 * carries, in the colour of its destination. The TOP nodes of each side by volume are drawn by name
 * and the rest is one grey "others" node, so a plan of 20 nodes and one of 100,000 read alike. Plain
 * SVG elements, a bounded number of them whatever the plan. */
"use strict";

const rkFlows = (() => {
  const NS = "http://www.w3.org/2000/svg", W = 720, H = 320, GAP = 6, TOP = 10, X0 = 200, X1 = W - 200, BAR = 12;
  const OTHERS = "\u0000others"; /* a key no node id can be: ids are printable */

  function el(tag, attrs, text) {
    const e = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /* One side: its nodes by volume, the TOP largest kept and the rest as OTHERS; each with its slot. */
  function side(transfers, key, scale) {
    const vol = new Map();
    for (const t of transfers) vol.set(t[key], (vol.get(t[key]) || 0) + t.fraction);
    const ranked = [...vol].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    const kept = ranked.slice(0, TOP), rest = ranked.slice(TOP);
    if (rest.length) kept.push([OTHERS, rest.reduce((s, x) => s + x[1], 0), rest.length]);
    const slots = new Map();
    let y = 24;
    for (const [id, v, n] of kept) {
      slots.set(id, { id, v, n, y, at: y });
      y += Math.max(1, v * scale) + GAP;
    }
    return { slots, name: (id) => (slots.has(id) ? id : OTHERS) };
  }

  const colourOf = (id) => (id === OTHERS ? rkDraw.OTHERS : rkDraw.colour(id));
  const label = (s) => (s.id === OTHERS ? `${s.n.toLocaleString("en-US")} others` : s.id) + " " + rkFmt.pct(s.v);

  /* The picture of `transfers` ([{from, to, fraction}]) that together move `moved`. */
  function picture(transfers, moved) {
    const rows = Math.min(TOP + 1, Math.max(new Set(transfers.map((t) => t.from)).size, new Set(transfers.map((t) => t.to)).size));
    const scale = (H - 24 - GAP * rows) / moved, from = side(transfers, "from", scale), to = side(transfers, "to", scale);
    const bands = new Map(); /* (from slot, to slot) -> fraction, others merged */
    for (const t of transfers) {
      const k = from.name(t.from) + "\u0001" + to.name(t.to);
      bands.set(k, (bands.get(k) || 0) + t.fraction);
    }
    const svg = el("svg", { id: "flows", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
      "aria-label": `where the moved ${rkFmt.pct(moved)} goes: from the nodes that lose keys on the left to those that gain them on the right` });
    svg.append(el("text", { x: X0, y: 14, "text-anchor": "end", class: "h" }, "loses keys"), el("text", { x: X1, y: 14, class: "h" }, "gains keys"));
    for (const [k, f] of [...bands].sort((a, b) => b[1] - a[1])) {
      const [a, b] = k.split("\u0001"), s = from.slots.get(a), d = to.slots.get(b), th = Math.max(0.5, f * scale);
      const xa = X0 + BAR, xm = (xa + X1) / 2;
      const path = el("path", { d: `M${xa} ${s.at}C${xm} ${s.at} ${xm} ${d.at} ${X1} ${d.at}v${th}C${xm} ${d.at + th} ${xm} ${s.at + th} ${xa} ${s.at + th}Z`,
        fill: colourOf(b), "fill-opacity": "0.55" });
      path.append(el("title", {}, `${a === OTHERS ? "others" : a} → ${b === OTHERS ? "others" : b}: ${rkFmt.pct(f)}`));
      svg.append(path);
      s.at += th;
      d.at += th;
    }
    for (const [x, sl, anchor, dx] of [[X0, from.slots, "end", -4], [X1, to.slots, "start", BAR + 4]])
      for (const s of sl.values()) {
        const hgt = Math.max(1, s.v * scale);
        svg.append(el("rect", { x, y: s.y, width: BAR, height: hgt, fill: colourOf(s.id) }),
          el("text", { x: x + dx, y: s.y + hgt / 2 + 4, "text-anchor": anchor }, label(s)));
      }
    return svg;
  }

  return { picture };
})();

if (typeof module !== "undefined") module.exports = { rkFlows };
