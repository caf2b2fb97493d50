// test_console.js BASE TOKEN OUTDIR — drives the operator console of a running ringkeeperd (seeded
// by test_console.sh) in the system chromium, headless, through puppeteer-core: every view loads,
// every number shown equals the API's JSON, the self-checks pass (and fail on a tampered plan),
// the circles are drawn in the colours of the server's pictures, hovering or stepping with the
// keys onto an arc shows what the server's arc route and the plan's arcs say, a 4M-point ring stays a bounded number of DOM nodes (its render time is printed, not
// judged: bench_render.js does that), activate works with a token and shows the server's refusals
// verbatim, a rollout's steps and writes (approve, start, pause), Tab reaches every control, and
// nothing is logged as an error. Screenshots go to
// OUTDIR. Exits 1 on any failure.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const puppeteer = require("puppeteer-core");
const { check, tally, api, open, hoverRing, FLAGS, tabReachesAll } = require("./harness.js");
const { emptyView, clustersView, clusterView, planView, thousand, bigViews, tampered } = require("./views_read.js");
const { activate, rolloutView, livePanels } = require("./views_write.js");

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "rk-chromium-"));
  const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", args: [...FLAGS, `--user-data-dir=${profile}`],
    headless: true, timeout: 30000 });
  const errors = [];
  try {
    const page = await browser.newPage();
    await page.setBypassCSP(true); // for axe-core, injected by accessible()
    await page.setViewport({ width: 1200, height: 900 });
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("pageerror", (e) => errors.push(String(e)));
    await emptyView(page);
    await clustersView(page);
    await tabReachesAll(page, "clusters");
    await clusterView(page);
    await tabReachesAll(page, "cluster");
    await planView(page, "#/c/c/plan", 1, 3, "plan-default"); // active -> latest: a removal
    await planView(page, "#/c/c/plan?from=1&to=2", 1, 2, "plan");
    await tabReachesAll(page, "plan");
    const stepped = await planView(page, "#/c/c/plan?from=1&to=2&step=0.05", 1, 2, "plan-steps", "&max_step=0.05");
    const steps = await page.$$eval("[data-k^='plan.steps.']", (es) => es.length);
    check("plan-steps: the steps are shown", stepped.steps.length > 1 && steps === 3 * stepped.steps.length, `${steps} numbers, ${stepped.steps.length} steps`);
    await open(page, "#/c/kt");
    const kt = await api("/v1/clusters/kt/versions/1/picture"), ktRing = await api("/v1/clusters/kt/plan?from=1&to=1&arcs=false");
    await hoverRing(page, "ketama ring", 230, kt.runs, ktRing.nodes, "share_after", "/v1/clusters/kt/versions/1/arc", 32);
    await thousand(page);
    await bigViews(page);
    check("no console errors while viewing", errors.length === 0, JSON.stringify(errors));
    await activate(page, errors);
    await rolloutView(page, errors);
    await livePanels(page, errors);
    await tampered(browser);
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  const { passed, failures } = tally();
  for (const f of failures) console.log("FAIL: " + f);
  console.log(`${passed} passed, ${failures.length} failed`);
  process.exit(failures.length ? 1 : 0);
}

setTimeout(() => { console.log("FAIL: the browser test took over 360 s"); process.exit(1); }, 360000).unref();
main().catch((e) => {
  for (const f of tally().failures) console.log("FAIL: " + f);
  console.log("FAIL: " + (e.stack || e));
  process.exit(1);
});
