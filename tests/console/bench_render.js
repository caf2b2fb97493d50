// bench_render.js RINGKEEPERD [RUNS] — how long the console takes to show a 100000-node, 4M-point
// ring, and a plan between two such versions, in the system chromium, headless. Run by hand (it is
// no CTest test: timings on a shared machine are no pass/fail material there); docs/PERFORMANCE.md
// has the figures and the command. It starts its own ringkeeperd on a free loopback port with a
// temporary database, publishes the two versions, and reports per view the median of RUNS loads
// (default 5) of the time from the route to the first frame drawn (fetches, the server's pictures
// computed by the library, JSON parsing, the drawing), for the first screen (a plan's verdict) and
// the whole view, with the parts measured apart once. Exits 1 when a median is over its target:
// 1 s for a plan's first screen, 2 s for a whole view.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const os = require("os");
const path = require("path");
const puppeteer = require("puppeteer-core");

const [RKD, RUNS = "5"] = process.argv.slice(2);
const LIMIT_MS = 2000; /* a whole view */
const FIRST_MS = 1000; /* a plan's first screen, its verdict */
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

// ringkeeperd on 127.0.0.1:0 with a database in dir; resolves to its base URL once it listens.
function startServer(dir) {
  /* a 100000-node plan is 100010 rows: over the default --max-plan-rows, as its operator would raise it */
  const server = spawn(RKD, ["--listen", "127.0.0.1:0", "--db", path.join(dir, "bench.db"), "--max-plan-rows", "200000"], { stdio: ["ignore", "ignore", "pipe"] });
  return new Promise((resolve, reject) => {
    let log = "";
    server.stderr.on("data", (d) => {
      log += d;
      const m = /listening on port (\d+)/.exec(log);
      if (m) resolve({ server, base: `http://127.0.0.1:${m[1]}` });
    });
    server.on("exit", () => reject(new Error("ringkeeperd exited: " + log)));
    setTimeout(() => reject(new Error("ringkeeperd did not listen within 10 s: " + log)), 10000).unref();
  }).catch((e) => {
    server.kill("SIGKILL");
    throw e;
  });
}

function topology(ids) {
  return { hash: "xxh3_64", vnode_factor: 40, nodes: ids.map((id, k) => ({ id, addr: `10.${k >> 16}.${(k >> 8) & 255}.${k & 255}:11211`, weight: 1 })) };
}

async function seed(base) {
  const ids = Array.from({ length: 100000 }, (_, k) => "node-" + String(k).padStart(6, "0"));
  for (const doc of [topology(ids), topology([...ids.slice(10), ...Array.from({ length: 10 }, (_, k) => `new-${k}`)])]) {
    const r = await fetch(base + "/v1/clusters/big/versions", { method: "POST", body: JSON.stringify(doc) });
    /* read the answer (the version, 6 MB): the request, and the body it counts against
     * --max-bodies, ends only then, and the next publish would be 503 busy */
    const text = await r.text();
    if (r.status !== 201) throw new Error("publish: " + r.status + " " + text.slice(0, 300));
  }
  const r = await fetch(base + "/v1/clusters/big/versions/1/activate", { method: "POST" });
  if (r.status !== 200) throw new Error("activate: " + r.status);
}

// Loads the view at hash `runs` times; the times of its first screen (data-render-ms) and of the
// whole view (data-full-ms) in ms: {first: [...], full: [...]}.
async function times(page, base, hash, runs) {
  const out = { first: [], full: [] };
  for (let i = 0; i < runs; i++) {
    await page.goto("about:blank"); /* else the same URL is only a hash change, and no new load */
    await page.goto(`${base}/ui/${hash}`, { waitUntil: "load" });
    await page.waitForFunction((h) => document.getElementById("view").dataset.ready === h, { timeout: 120000 }, hash);
    const [first, full] = await page.$eval("#view", (e) => [e.dataset.renderMs, e.dataset.fullMs]);
    out.first.push(Number(first));
    out.full.push(Number(full));
  }
  return out;
}

// The parts of the two views, timed apart in the page (the rings are cached by then, as after
// the loads above): where the time goes.
function parts(page) {
  return page.evaluate(async () => {
    const t = [performance.now()], at = () => t.push(performance.now());
    const picture = await (await fetch("/v1/clusters/big/versions/1/picture")).json();
    at();
    const ids = [];
    for (const n of picture.nodes) ids[n.rank] = n.id;
    document.body.append(rkDraw.picture([{ label: "bench", radius: 230, width: 44, bits: picture.bits, ids, bins: rkDraw.bins(picture.runs), arcs: "/v1/clusters/big/versions/1/arc" }], "bench"));
    at();
    await (await fetch("/v1/clusters/big/versions/1/arc?hash=8000000000000000")).json();
    at();
    await (await fetch("/v1/clusters/big/plan?from=1&to=2&arcs=false&nodes=false")).json();
    at();
    await (await fetch("/v1/clusters/big/plan?from=1&to=2")).json();
    at();
    await (await fetch("/v1/clusters/big/plan?from=1&to=2&format=picture")).json();
    at();
    const names = ["ring picture, 2880 bins (fetch + parse)", "bins drawn", "one arc (fetch + parse)",
      "plan summary, nodes=false (fetch + parse)", "plan JSON (fetch + parse)", "plan picture, 3 circles (fetch + parse)"];
    return names.map((n, i) => `${n}: ${(t[i + 1] - t[i]).toFixed(0)} ms`);
  });
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rk-bench-"));
  const { server, base } = await startServer(dir);
  let failed = false, browser = null;
  try {
    browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", args: [...FLAGS, `--user-data-dir=${path.join(dir, "profile")}`], headless: true });
    await seed(base);
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 900 });
    for (const [hash, name] of [["#/c/big", "100000-node ring (4M points)"], ["#/c/big/plan", "plan between two 100000-node versions"]]) {
      const got = await times(page, base, hash, Number(RUNS));
      const views = [[hash.endsWith("plan") ? "first screen, the verdict" : "first screen, the ring drawn", got.first, hash.endsWith("plan") ? FIRST_MS : LIMIT_MS],
        ["whole view", got.full, LIMIT_MS]];
      for (const [part, list, limit] of views) {
        const ms = list.sort((a, b) => a - b), median = ms[ms.length >> 1];
        failed ||= median > limit;
        console.log(`${median > limit ? "MISS" : "PASS"} ${name}, ${part}: median ${median} ms of ${ms.join(", ")} (target ${limit} ms)`);
      }
    }
    await times(page, base, "#/", 1); /* a page that fetches no picture meanwhile */
    for (const line of await parts(page)) console.log("  " + line);
  } finally {
    if (browser) await browser.close();
    if (server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((resolve) => server.on("exit", resolve));
      server.kill("SIGTERM");
      await exited;
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log("FAIL: " + (e.stack || e));
  process.exit(1);
});
