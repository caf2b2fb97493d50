/* format.js — numbers as the console shows them to people: shares and fractions as percentages of
 * three significant digits ("13.6%", "0.0412%"), balances as ratios to the ideal ("1.24×"), counts
 * with thousands separated. The exact value stays beside the text (data-v) for copying and checks. */
"use strict";

const rkFmt = {
  pct(v) {
    if (v === 0) return "0%";
    if (Math.abs(v) < 1e-6) return (v < 0 ? "−" : "") + "<0.0001%"; /* no exponents for people */
    return Number((100 * v).toPrecision(3)).toString() + "%";
  },
  ratio(v) {
    return v.toFixed(2) + "×";
  },
  count(v) {
    return Number(v).toLocaleString("en-US");
  },
  plain(v) {
    return String(v);
  },
};

if (typeof module !== "undefined") module.exports = { rkFmt };
