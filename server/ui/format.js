/* format.js — numbers as the console shows them to people: shares and fractions as percentages of
 * three significant digits ("13.6%", "0.0412%"), balances as ratios to the ideal ("1.24×"), counts
 * with thousands separated, bytes in binary units as the CLI's plan prints them ("3.4 MiB"), ages
 * in the largest unit that fits ("12 min"). The exact value stays beside the text (data-v) for copying and checks. */
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
  bytes(v) {
    const unit = ["B", "KiB", "MiB", "GiB", "TiB"];
    let u = 0;
    for (; u < 4 && v >= 1024; u++) v /= 1024;
    return (u ? v.toFixed(1) : v.toFixed(0)) + " " + unit[u];
  },
  age(s) {
    if (s < 120) return `${Math.max(0, Math.round(s))} s`;
    if (s < 7200) return `${Math.round(s / 60)} min`;
    if (s < 172800) return `${Math.round(s / 3600)} h`;
    return `${Math.round(s / 86400)} days`;
  },
  plain(v) {
    return String(v);
  },
};

if (typeof module !== "undefined") module.exports = { rkFmt };
