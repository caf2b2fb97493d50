// shot_view.js BASE HASH FILE — one view of a running ringkeeperd's console, as Debian's chromium
// shows it at 1200 x 900 (headless, through puppeteer-core), into the PNG FILE: for the pictures in
// the docs that other tests' data make (test_suggest.sh: docs/LOAD.md's worked example). The view
// must say it is ready (data-ready), as every view does once drawn.
"use strict";
const fs = require("fs");
const os = require("os");
const path = require("path");
const puppeteer = require("puppeteer-core");
const { ready, FLAGS } = require("./harness.js");

async function main() {
  const [, , base, hash, file] = process.argv;
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "rk-chromium-"));
  const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", args: [...FLAGS, `--user-data-dir=${profile}`],
    headless: true, timeout: 30000 });
  try {
    const page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 900 });
    await page.goto(base + "/ui/" + hash, { waitUntil: "load" });
    await ready(page, hash);
    await page.screenshot({ path: file });
  } finally {
    await browser.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

setTimeout(() => { console.log("shot_view.js: over 60 s"); process.exit(1); }, 60000).unref();
main().catch((e) => { console.log("shot_view.js: " + (e.stack || e)); process.exit(1); });
