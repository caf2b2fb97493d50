/* selfcheck.js — recomputes a plan document's invariants (docs/RING.md) from the JSON alone, so
 * an operator need not trust the server's arithmetic, and the modulo baseline to compare with. */
"use strict";

const RK_TOLERANCE = 1e-9; /* fractions are doubles summed in another order than the server's */

function rkSum(list, f) {
  return list.reduce((s, x) => s + f(x), 0);
}

/* Each check: {name, status: "pass" | "fail" | "warn" | "skip", detail}. */
function rkSelfCheck(plan) {
  const out = [];
  const near = (a, b) => Math.abs(a - b) <= RK_TOLERANCE;
  const add = (name, ok, detail, soft) =>
    out.push({ name, status: ok ? "pass" : soft ? "warn" : "fail", detail });
  const moved = plan.moved_fraction;
  if (Array.isArray(plan.arcs)) {
    const sum = rkSum(plan.arcs, (a) => a.fraction);
    add("arc fractions sum to moved_fraction", near(sum, moved), `${sum} vs ${moved}`);
    const self = plan.arcs.filter((a) => a.from === a.to).length;
    add("no arc from a node to itself", self === 0, `${self} such arcs`);
    let bad = -1;
    for (let i = 0; i < plan.arcs.length && bad < 0; i++) {
      const first = BigInt("0x" + plan.arcs[i].first), last = BigInt("0x" + plan.arcs[i].last);
      const prev = i > 0 ? BigInt("0x" + plan.arcs[i - 1].last) : -1n;
      if (last < first || first <= prev) bad = i;
    }
    add("arcs sorted and non-overlapping", bad < 0,
        bad < 0 ? `${plan.arcs.length} arcs in order` : `arc ${bad} starts before the previous one ends`);
    const counted = rkSum(plan.transfers, (t) => t.arcs);
    add("transfers count every arc", counted === plan.arcs.length,
        `${counted} vs ${plan.arcs.length} arcs`);
  } else {
    out.push({ name: "arcs", status: "skip", detail: "the arc list was left out (arcs=false)" });
  }
  const moves = rkSum(plan.transfers, (t) => t.fraction);
  add("transfers sum to moved_fraction", near(moves, moved), `${moves} vs ${moved}`);
  const before = rkSum(plan.nodes, (n) => n.share_before), after = rkSum(plan.nodes, (n) => n.share_after);
  add("shares sum to 1 before", near(before, 1), `${before}`);
  add("shares sum to 1 after", near(after, 1), `${after}`);
  const gained = rkSum(plan.nodes, (n) => n.gained), lost = rkSum(plan.nodes, (n) => n.lost);
  add("nodes gain and lose moved_fraction", near(gained, moved) && near(lost, moved),
      `gained ${gained}, lost ${lost}`);
  /* Not an invariant: minimal comes from ideal shares, so a removal from an unbalanced ring can
   * move less than it. Worth a look, not a failure. */
  add("moved >= minimal", moved + RK_TOLERANCE >= plan.minimal_fraction,
      `${moved} vs ${plan.minimal_fraction}`, true);
  return out;
}

function rkGcd(a, b) {
  while (b) [a, b] = [b, a % b];
  return a;
}

/* What hash % N -> hash % M would move: h keeps its node when h % N == h % M, which in [0, lcm)
 * holds exactly for h < min(N, M) (h = r mod N and mod M means h = r mod lcm); so the fraction
 * moved is 1 - min(N, M) / lcm(N, M). */
function rkModuloMoved(n, m) {
  if (n < 1 || m < 1) return n === m ? 0 : 1;
  const lcm = (n / rkGcd(n, m)) * m;
  return 1 - Math.min(n, m) / lcm;
}

if (typeof module !== "undefined") module.exports = { rkSelfCheck, rkModuloMoved };
