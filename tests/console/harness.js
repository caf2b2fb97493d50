// harness.js — what the console's browser test (test_console.js) shares between its views: the
// server and token under test (argv), the pass/fail tally, the API, waiting for a view, pointing
// at the ring pictures, checking the numbers shown against the API's JSON, accessibility (axe-core),
// Tab order, clicks on writes, the live panels' runs, screenshots.
"use strict";
const path = require("path");
const { rkDraw } = require("../../server/ui/ringdraw.js");
const { rkFmt } = require("../../server/ui/format.js");

const [BASE, TOKEN, OUT, EMPTY_BASE] = process.argv.slice(2); // EMPTY_BASE: a server with no cluster
const failures = [];
let passed = 0;
const tally = () => ({ passed, failures });
const check = (name, ok, detail) => (ok ? passed++ : failures.push(`${name}: ${detail || ""}`));
const pct = (v) => (100 * v).toFixed(4) + "%";
const api = async (p, init) => (await fetch(BASE + p, init)).json();

// Chromium must not reach for the network on this machine: these flags keep it local.
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

async function ready(page, hash, timeout) {
  await page.waitForFunction((h) => document.getElementById("view").getAttribute("data-ready") === h,
    { timeout: timeout || 15000 }, hash);
}

async function open(page, hash, timeout) {
  await page.evaluate(() => document.getElementById("view").removeAttribute("data-ready"));
  await page.evaluate((h) => {
    if (location.hash === h) window.dispatchEvent(new HashChangeEvent("hashchange")); // a reload of the view
    else location.hash = h;
  }, hash);
  await ready(page, hash, timeout);
}

const fraction = (hex, bits) => Number(BigInt("0x" + hex)) / 2 ** bits;
const plus = (hex, d, bits) => (((BigInt("0x" + hex) + BigInt(d)) % (1n << BigInt(bits))) + (1n << BigInt(bits))) % (1n << BigInt(bits));
const hex16 = (v) => v.toString(16).padStart(16, "0");

// Points the mouse at fraction f of the circle of radius r of the ring picture; what the box says.
async function pointAt(page, f, r) {
  await page.$eval("canvas.ring-base", (c) => c.scrollIntoView({ block: "center" }));
  const box = await (await page.$("canvas.ring-base")).boundingBox(), a = 2 * Math.PI * f - Math.PI / 2;
  await page.mouse.move(box.x + box.width / 2 + r * Math.cos(a), box.y + box.height / 2 + r * Math.sin(a));
  return info(page);
}

// The colour drawn at fraction f of the circle of radius r, as #rrggbb.
async function colourAt(page, f, r) {
  return page.$eval("canvas.ring-base", (c, f, r) => {
    const a = 2 * Math.PI * f - Math.PI / 2, k = c.width / c.clientWidth;
    const [red, g, b] = c.getContext("2d").getImageData(Math.round(k * (c.clientWidth / 2 + r * Math.cos(a))), Math.round(k * (c.clientHeight / 2 + r * Math.sin(a))), 1, 1).data;
    return "#" + [red, g, b].map((x) => x.toString(16).padStart(2, "0")).join("");
  }, f, r);
}

// What the box says, once no question to the server is open.
async function info(page) {
  await page.waitForFunction(() => !document.getElementById("arc-info").dataset.pending);
  return page.$eval("#arc-info", (e) => ({ ...e.dataset, hidden: e.hidden, text: e.textContent }));
}

// The widest run of a circle's bins ([count, rank]): the fraction at its middle and its rank.
function widestRun(runs) {
  let at = 0, best = null;
  for (const [n, rank] of runs) {
    if (rank !== null && (!best || n > best.n)) best = { n, rank, at };
    at += n;
  }
  return { f: (best.at + best.n / 2) / at, rank: best.rank };
}

// What the box says of a ring's arc: the server's arc at the value it names (first, last, owner,
// share), the owner's share as the plan's JSON has it; `want` the arc the test expects, if any.
async function sameArc(name, tip, arcs, share, want) {
  const arc = await api(`${arcs}?hash=${tip.at}`), expected = want || arc;
  check(`${name}: the arc shown`, !tip.hidden && ["first", "last", "owner"].every((k) => tip[k] === arc[k] && arc[k] === expected[k]) &&
    Number(tip.share) === arc.share && arc.share === share && tip.text.includes(pct(share)), `${JSON.stringify(tip)} vs ${JSON.stringify(expected)}, share ${share}`);
  return arc;
}

// Points at the middle of the widest run of a ring circle: drawn in its node's colour, and the box
// says the server's arc there, owned by that node, with the JSON's share.
async function hoverRing(page, name, r, runs, nodes, side, arcs, bits) {
  const run = widestRun(runs), drawn = await colourAt(page, run.f, r);
  const want = rkDraw.colour(nodes[run.rank].id); // a node's colour comes from its id
  check(`${name}: the widest run in its node's colour`, drawn === want, `${drawn} vs ${want}`);
  const tip = await pointAt(page, run.f, r), at = fraction(tip.at || "0", bits);
  check(`${name}: the value asked is under the pointer`, Math.abs(at - run.f) < 0.003, `${at} vs ${run.f}`);
  const arc = await sameArc(`${name}: hover`, tip, arcs, nodes[run.rank][side]);
  check(`${name}: the arc there is the run's node's`, arc.owner === nodes[run.rank].id && arc.rank === run.rank, `${arc.owner} vs ${nodes[run.rank].id}`);
}

// One share shown per node, up to the 200 rows a table shows.
async function sharesShown(page, name, nodes, side) {
  const shown = await page.$$eval(`[data-k$='.${side}']`, (es) => es.length);
  check(`${name}: a share per node`, shown === Math.min(200, nodes.length), `${shown} of ${nodes.length}`);
}

// The drawing is a fixed handful of elements, and the page a bounded number, whatever the ring.
async function bounded(page, name) {
  const [picture, all] = await page.evaluate(() => [document.querySelectorAll(".ring-box, .ring-box *").length, document.querySelectorAll("*").length]);
  check(`${name}: the picture is a few DOM nodes`, picture <= 10, picture);
  check(`${name}: the page is under 5000 DOM nodes`, all < 5000, all);
}

// Every [data-k] number on the page against the JSON at that path in `docs`.
async function numbersMatch(page, view, docs, only = "") {
  const shown = (await page.$$eval("[data-k]", (es) => es.map((e) => [e.dataset.k, e.dataset.v, e.textContent, e.dataset.f])))
    .filter(([k]) => k.startsWith(only));
  check(`${view}: numbers shown`, shown.length > 0, "none");
  for (const [k, v, text, f] of shown) {
    const want = k.split(".").reduce((o, key) => (o == null ? undefined : o[key]), docs);
    const ok = want !== undefined && Number(v) === want && text === rkFmt[f](want);
    check(`${view}: ${k}`, ok, `shows ${text} (${v}), the API says ${want}`);
  }
}

// axe-core run in the page: no violation of its rules (WCAG 2 A and AA, and its best practices) on
// the view shown. The server's CSP refuses injected scripts: the test's page bypasses it for this.
async function accessible(page, name) {
  if (!(await page.evaluate(() => !!window.axe))) await page.addScriptTag({ path: require.resolve("axe-core/axe.min.js") });
  const found = await page.evaluate(async () => (await window.axe.run(document, { resultTypes: ["violations"] })).violations
    .map((x) => `${x.id} (${x.impact}) at ${x.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")}`));
  check(`${name}: axe-core finds no violation`, found.length === 0, found.join("; "));
}

// The first screen of the view (what a reviewer sees without scrolling; a hover's shot is scrolled to
// its picture): tests/console/screenshots.sh keeps some in docs/console/.
async function shot(page, name) {
  await page.screenshot({ path: path.join(OUT, name + ".png") });
}

// Tab from the top must reach every link, button, field and list on the page.
async function tabReachesAll(page, name) {
  // the controls shown: a hidden form's (the forced activation before a 422) are not reachable
  // a disabled button (a write without a token) is not reachable, by design
  const total = await page.$$eval("a[href], button:not([disabled]), select, input, [tabindex='0']",
    (es) => es.filter((e) => !e.closest("[hidden]")).map((e, i) => (e.dataset.tab = i)).length);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  const seen = new Set();
  for (let i = 0; i < total + 5; i++) {
    await page.keyboard.press("Tab");
    const id = await page.evaluate(() => document.activeElement && document.activeElement.dataset.tab);
    if (id !== undefined) seen.add(id);
  }
  check(`${name}: Tab reaches every control`, seen.size === total, `${seen.size} of ${total}`);
}

// Clicks a write; what the page then says of the server's answer (after a success, the view drawn
// again says it).
async function click(page, selector) {
  await page.$eval("#action-result", (e) => (e.textContent = ""));
  await page.evaluate(() => document.getElementById("view").removeAttribute("data-ready"));
  await page.click(selector);
  await page.waitForFunction(() => document.getElementById("action-result").textContent !== "");
  const said = await page.$eval("#action-result", (e) => e.textContent);
  if (said.startsWith("2")) await ready(page, await page.evaluate(() => location.hash));
  return said;
}

// Waits for the view's live panels to have run more than `runs` times (a change reached them);
// the time it took, in ms.
async function liveAfter(page, runs, what) {
  const t0 = Date.now();
  await page.waitForFunction((n) => Number(document.getElementById("view").dataset.liveRuns) > n, { timeout: 10000 }, runs)
    .catch(() => check(`live: ${what} reached the page`, false, "not within 10 s"));
  return Date.now() - t0;
}
// Keeps `value` as the tab's token ("": forgets it), and waits for the view drawn again with it.
async function setToken(page, value) {
  await page.evaluate(() => document.getElementById("view").removeAttribute("data-ready"));
  if (value) {
    await page.type("#token", value);
    await page.click("#token-save");
  } else {
    await page.click("#token-forget");
  }
  await ready(page, await page.evaluate(() => location.hash || "#/"));
}

// The badges of a cluster in the clusters list ({key: level}), on the view shown.
const badges = (page, c) => page.$eval(`[data-attention="${c}"]`, (e) =>
  Object.fromEntries([...e.querySelectorAll("[data-badge]")].map((b) => [b.dataset.badge, b.className.replace("badge ", "")])));

const liveRuns = (page) => page.$eval("#view", (e) => Number(e.dataset.liveRuns || 0));

module.exports = { BASE, TOKEN, OUT, EMPTY_BASE, check, tally, pct, api, FLAGS, ready, open, fraction, plus, hex16,
  pointAt, colourAt, info, sameArc, hoverRing, sharesShown, bounded, numbersMatch, accessible, shot,
  tabReachesAll, click, liveAfter, liveRuns, setToken, badges };
