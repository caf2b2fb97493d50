// cross_site.js MODE URL [BASE] — one visit of Debian's chromium (headless, puppeteer-core) for
// test_cross_site.sh; prints what the page saw as one JSON line.
//   attack URL BASE: opens the attack page at URL (another origin) and runs every write it tries
//     against the ringkeeperd at BASE ("refused"); allowed URL BASE: only its CORS write ("allowed").
//   rebind URL: opens URL, a name that chromium's resolver maps to 127.0.0.1 (the DNS of a rebinding
//     attack, once the page has loaded), and publishes from it as its own origin.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const puppeteer = require("puppeteer-core");
const { FLAGS } = require("../harness.js");

const [MODE, URL, BASE] = process.argv.slice(2);

async function visit(page) {
  if (MODE === "rebind") {
    await page.goto(URL + "/healthz");
    return page.evaluate(() => fetch("/v1/clusters/rebind/versions?activate=true", { method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ hash: "fnv1a_32", vnode_factor: 40, nodes: [{ id: "r", addr: "10.6.6.6:11211", weight: 1 }] }) })
      .then((r) => ({ status: r.status }), (e) => ({ threw: e.name })));
  }
  await page.goto(`${URL}?rk=${encodeURIComponent(BASE)}`);
  return page.evaluate((m) => window.run(m), MODE === "allowed" ? "allowed" : "refused");
}

async function main() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "rk-chromium-"));
  const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", headless: true, timeout: 30000,
    args: [...FLAGS, `--user-data-dir=${profile}`, "--host-resolver-rules=MAP rebind.test 127.0.0.1"] });
  try {
    const page = await browser.newPage();
    console.log(JSON.stringify(await visit(page)));
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

setTimeout(() => { console.log("the browser took over 90 s"); process.exit(1); }, 90000).unref();
main().catch((e) => { console.log(String(e)); process.exit(1); });
