// test_console.js BASE TOKEN OUTDIR — drives the operator console of a running ringkeeperd (seeded
// by test_console.sh) in the system chromium, headless, through puppeteer-core: every view loads,
// every number shown equals the API's JSON, the self-checks pass (and fail on a tampered plan),
// activate works with a token and shows the server's refusals verbatim, Tab reaches every control,
// and nothing is logged as an error. Screenshots go to OUTDIR. Exits 1 on any failure.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const puppeteer = require("puppeteer-core");
const { rkModuloMoved } = require("../../server/ui/selfcheck.js");

const [BASE, TOKEN, OUT] = process.argv.slice(2);
const failures = [];
let passed = 0;
const check = (name, ok, detail) => (ok ? passed++ : failures.push(`${name}: ${detail || ""}`));
const pct = (v) => (100 * v).toFixed(4) + "%";
const api = async (p, init) => (await fetch(BASE + p, init)).json();

// Chromium must not reach for the network on this machine: these flags keep it local.
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

async function ready(page, hash) {
  await page.waitForFunction((h) => document.getElementById("view").getAttribute("data-ready") === h,
    { timeout: 15000 }, hash);
}

async function open(page, hash) {
  await page.evaluate(() => document.getElementById("view").removeAttribute("data-ready"));
  await page.evaluate((h) => {
    if (location.hash === h) window.dispatchEvent(new HashChangeEvent("hashchange")); // a reload of the view
    else location.hash = h;
  }, hash);
  await ready(page, hash);
}

// Every [data-k] number on the page against the JSON at that path in `docs`.
async function numbersMatch(page, view, docs) {
  const shown = await page.$$eval("[data-k]", (es) => es.map((e) => [e.dataset.k, e.dataset.v, e.textContent]));
  check(`${view}: numbers shown`, shown.length > 0, "none");
  for (const [k, v, text] of shown) {
    const want = k.split(".").reduce((o, key) => (o == null ? undefined : o[key]), docs);
    const ok = want !== undefined && Number(v) === want && (text === String(want) || text === pct(want));
    check(`${view}: ${k}`, ok, `shows ${text} (${v}), the API says ${want}`);
  }
}

async function imageLoaded(page, selector) {
  await page.waitForFunction((s) => { const i = document.querySelector(s); return i && i.complete; }, {}, selector);
  return page.$eval(selector, (i) => i.naturalWidth);
}

async function shot(page, name) {
  await page.screenshot({ path: path.join(OUT, name + ".png"), fullPage: true });
}

async function clustersView(page) {
  await page.goto(BASE + "/", { waitUntil: "load" });
  check("GET / lands on /ui/", page.url().startsWith(BASE + "/ui/"), page.url());
  await ready(page, "#/");
  const clusters = (await api("/v1/clusters")).clusters;
  await numbersMatch(page, "clusters", { clusters });
  for (const c of clusters) {
    const staged = (await api(`/v1/clusters/${c.cluster}/versions?limit=1000`)).versions.filter((v) => v.state === "staged").length;
    const text = await page.$eval(`[data-staged="${c.cluster}"]`, (e) => e.textContent);
    check(`clusters: staged of ${c.cluster}`, text === String(staged), `${text} vs ${staged}`);
    const s = (await api(`/v1/clusters/${c.cluster}/clients?limit=1`)).summary;
    const want = s.total === 0 ? "none seen" : s.converged ? `yes, ${s.total}`
      : `no: ${s.by_version[String(s.active)] || 0} of ${s.total} on v${s.active}`;
    const shown = await page.$eval(`[data-clients="${c.cluster}"]`, (e) => e.textContent);
    check(`clusters: clients of ${c.cluster}`, shown === want, `${shown} vs ${want}`);
  }
  // test_console.sh left cluster c with one client at v1 and another cluster with none
  const cells = await page.$$eval("[data-clients]", (es) => es.map((e) => e.textContent));
  check("clusters: clients converged shown", cells.includes("yes, 1") && cells.includes("none seen"), cells.join(" | "));
  await shot(page, "clusters");
}

async function clusterView(page) {
  await open(page, "#/c/c");
  const versions = (await api("/v1/clusters/c/versions?limit=1000")).versions;
  const a = versions.find((v) => v.state === "active").version;
  const ring = await api(`/v1/clusters/c/plan?from=${a}&to=${a}&arcs=false`);
  await numbersMatch(page, "cluster", { versions, ring });
  const rows = await page.$$eval("table tbody tr", (trs) => trs.map((t) => t.textContent));
  check("cluster: authors shown", versions.every((v, i) => rows[i].includes(v.state) && rows[i].includes(v.author)), rows[0]);
  check("cluster: the ring's picture", (await imageLoaded(page, "img.plan")) > 0, "not loaded");
  await shot(page, "cluster");
}

async function planView(page, hash, from, to, name) {
  await open(page, hash);
  const plan = await api(`/v1/clusters/c/plan?from=${from}&to=${to}`);
  await numbersMatch(page, name, { plan });
  const checks = await page.$$eval("#selfcheck tr", (trs) => trs.map((t) => [t.cells[0].textContent, t.dataset.status]));
  check(`${name}: self-checks`, checks.length >= 8 && checks.every(([, s]) => s === "pass" || s === "warn"), JSON.stringify(checks));
  const live = (k) => plan.nodes.filter((n) => n[k] > 0).length;
  const modulo = await page.$eval("#modulo", (e) => e.textContent);
  check(`${name}: modulo baseline`, modulo.includes(pct(rkModuloMoved(live("weight_before"), live("weight_after")))), modulo);
  check(`${name}: the plan's picture`, (await imageLoaded(page, "#plan-svg")) > 0, "not loaded");
  const warnings = await page.$$eval("#warnings li", (li) => li.map((l) => l.textContent));
  check(`${name}: warnings`, JSON.stringify(warnings) === JSON.stringify(plan.warnings), warnings);
  await shot(page, name);
  return plan;
}

// Tab from the top must reach every link, button, field and list on the page.
async function tabReachesAll(page, name) {
  const total = await page.$$eval("a[href], button, select, input", (es) => es.map((e, i) => (e.dataset.tab = i)).length);
  await page.evaluate(() => document.activeElement && document.activeElement.blur());
  const seen = new Set();
  for (let i = 0; i < total + 5; i++) {
    await page.keyboard.press("Tab");
    const id = await page.evaluate(() => document.activeElement && document.activeElement.dataset.tab);
    if (id !== undefined) seen.add(id);
  }
  check(`${name}: Tab reaches every control`, seen.size === total, `${seen.size} of ${total}`);
}

async function activate(page, errors) {
  await open(page, "#/c/c/plan?from=1&to=2");
  await page.click("#activate");
  await page.waitForFunction(() => document.getElementById("action-result").textContent !== "");
  const noToken = await page.$eval("#action-result", (e) => e.textContent);
  check("activate without a token: 401 shown", noToken.startsWith("401 unauthorized"), noToken);
  await page.type("#token", TOKEN);
  await page.click("#token-save");
  const stored = await page.evaluate(() => [sessionStorage.getItem("rk-token"), localStorage.length, document.cookie]);
  check("token in sessionStorage only", stored[0] === TOKEN && stored[1] === 0 && stored[2] === "", JSON.stringify(stored));
  await open(page, "#/c/c/plan?from=1&to=1");
  const refusal = await api("/v1/clusters/c/versions/1/activate", { method: "POST", headers: { Authorization: "Bearer " + TOKEN } });
  await page.click("#activate");
  await page.waitForFunction(() => document.getElementById("action-result").textContent !== "");
  const conflict = await page.$eval("#action-result", (e) => e.textContent);
  check("409 shown verbatim", conflict === `409 ${refusal.error.code}: ${refusal.error.message}`, conflict);
  await shot(page, "refused");
  await open(page, "#/c/c/plan?from=1&to=2");
  await page.click("#activate");
  await page.waitForFunction(() => document.getElementById("action-result").textContent !== "");
  const done = await page.$eval("#action-result", (e) => e.textContent);
  const now = (await api("/v1/clusters")).clusters.find((c) => c.cluster === "c");
  check("activate with the token", done.startsWith("200") && now.active_version === 2, `${done}; active ${now.active_version}`);
  // Chromium logs every answer >= 400 to fetch() as an error: exactly the two refusals asked for.
  const refused = errors.filter((e) => /status of (401|409)/.test(e));
  check("the refusals are the only errors logged", refused.length === 2 && errors.length === 2, JSON.stringify(errors));
  errors.length = 0;
}

// A plan whose arcs do not add up: the page must say so, whatever the server claims.
async function tampered(browser) {
  const page = await browser.newPage();
  await page.setRequestInterception(true);
  page.on("request", async (req) => {
    if (!/\/v1\/clusters\/c\/plan\?from=1&to=2$/.test(req.url())) return req.continue();
    const plan = await api("/v1/clusters/c/plan?from=1&to=2");
    plan.arcs[0].fraction *= 2;
    plan.arcs.push({ ...plan.arcs[0], to: plan.arcs[0].from });
    req.respond({ status: 200, contentType: "application/json", body: JSON.stringify(plan) });
  });
  await page.goto(BASE + "/ui/#/c/c/plan?from=1&to=2");
  await ready(page, "#/c/c/plan?from=1&to=2");
  const summary = await page.$eval("#selfcheck-summary", (e) => e.className);
  const rows = Object.fromEntries(await page.$$eval("#selfcheck tr", (trs) => trs.map((t) => [t.cells[0].textContent, t.dataset.status])));
  check("tampered plan: self-check fails", summary === "fail", summary);
  check("tampered plan: the arc sum fails", rows["arc fractions sum to moved_fraction"] === "fail", JSON.stringify(rows));
  check("tampered plan: the self-arc fails", rows["no arc from a node to itself"] === "fail", JSON.stringify(rows));
  await shot(page, "tampered");
  await page.close();
}

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "rk-chromium-"));
  const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", args: [...FLAGS, `--user-data-dir=${profile}`],
    headless: true, timeout: 30000 });
  const errors = [];
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 900 });
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("pageerror", (e) => errors.push(String(e)));
    await clustersView(page);
    await tabReachesAll(page, "clusters");
    await clusterView(page);
    await tabReachesAll(page, "cluster");
    await planView(page, "#/c/c/plan", 1, 3, "plan-default"); // active -> latest: a removal
    await planView(page, "#/c/c/plan?from=1&to=2", 1, 2, "plan");
    await tabReachesAll(page, "plan");
    check("no console errors while viewing", errors.length === 0, JSON.stringify(errors));
    await activate(page, errors);
    await tampered(browser);
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  for (const f of failures) console.log("FAIL: " + f);
  console.log(`${passed} passed, ${failures.length} failed`);
  process.exit(failures.length ? 1 : 0);
}

setTimeout(() => { console.log("FAIL: the browser test took over 120 s"); process.exit(1); }, 120000).unref();
main().catch((e) => {
  for (const f of failures) console.log("FAIL: " + f);
  console.log("FAIL: " + (e.stack || e));
  process.exit(1);
});
