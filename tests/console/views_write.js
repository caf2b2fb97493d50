// views_write.js — the console's writes (test_console.js): the verdict and what each policy state
// offers, approve, activate, force, the migration window, a rollout's steps, and the live panels
// with a migration job's controls.
"use strict";
const { rkFmt } = require("../../server/ui/format.js");
const { BASE, TOKEN, check, api, ready, open, numbersMatch, accessible, shot, click, liveAfter,
  liveRuns, setToken, badges } = require("./harness.js");

// The verdict's rules as the page shows them ({key: state}), and the writes it offers (button ids).
const verdictItems = async (page) => Object.fromEntries(await page.$$eval("#policy li", (li) => li.map((l) => [l.dataset.item, l.dataset.state])));
const offered = async (page) => page.$$eval("#next button", (b) => b.map((x) => x.id));

// The verdict first, then each policy state with the writes it offers and nothing else: within the
// budget, over it (moved, balance), approvals missing, self-approval, an open migration window;
// every write asked first naming the version and the digest, and the server's refusals shown as it
// said them.
async function activate(page, errors) {
  const questions = [];
  page.on("dialog", (d) => { questions.push(d.message()); d.accept(); }); // every write asks first
  const auth = { Authorization: "Bearer " + TOKEN, "Content-Type": "application/json" };
  const policy = (p) => fetch(BASE + "/v1/clusters/c/policy", { method: "PUT", headers: auth, body: JSON.stringify(p) });
  await open(page, "#/c/c/plan?from=1&to=2");
  const plan = await api("/v1/clusters/c/plan?from=1&to=2");
  const head = await page.$eval("#headline", (e) => e.textContent);
  check("verdict: moved against the minimum", head.startsWith(`${rkFmt.pct(plan.moved_fraction)} of the keys move, ` +
    `${rkFmt.ratio(plan.moved_fraction / plan.minimal_fraction)} the minimum ${rkFmt.pct(plan.minimal_fraction)}`), head);
  const bottom = await page.$eval("#selfcheck-details", (e) => e.getBoundingClientRect().bottom);
  check("verdict: in the first screen (900 px)", bottom <= 900, bottom);
  check("verdict: the self-checks in one line", /^[✓!]\d+ invariants hold/.test(await page.$eval("#selfcheck-summary", (e) => e.textContent)), "");
  check("no token: no write offered", (await offered(page)).length === 0 &&
    (await page.$eval("#no-actions", (e) => e.textContent)).startsWith("No token kept"), JSON.stringify(await offered(page)));
  await setToken(page, TOKEN);
  const stored = await page.evaluate(() => [sessionStorage.getItem("rk-token"), localStorage.length, document.cookie]);
  check("token in sessionStorage only", stored[0] === TOKEN && stored[1] === 0 && stored[2] === "", JSON.stringify(stored));
  // The active version offers no write: the server would refuse it (409)
  await open(page, "#/c/c/plan?from=1&to=1");
  const none = await page.evaluate(() => [!!document.getElementById("activate"), !!document.getElementById("approve"),
    (document.getElementById("no-actions") || {}).textContent]);
  check("the active version: no approve or activate", !none[0] && !none[1] && none[2] === "v1 is the active version: nothing to approve or activate.",
    JSON.stringify(none));
  await loadVerdict(page, policy, auth);
  for (const [p, want, buttons] of [
    [{}, { budget: "info", balance: "info", approvals: "info", self: "info", window: "warn" }, ["activate"]],
    [{ max_moved_fraction: 0.5, max_balance_after: 3 }, { budget: "ok", balance: "ok" }, ["activate"]],
    [{ max_moved_fraction: 0.01, max_balance_after: null }, { budget: "bad", balance: "info" }, ["force"]],
    [{ max_moved_fraction: 1, max_balance_after: 1.01 }, { budget: "info", balance: "bad" }, ["force"]],
    [{ max_balance_after: null, approvals: 1 }, { approvals: "warn", self: "warn" }, ["approve"]]]) {
    await policy(p);
    await open(page, "#/c/c/plan?from=1&to=2");
    const shown = await verdictItems(page), got = await offered(page);
    check(`policy ${JSON.stringify(p)}: the rules' states`, Object.entries(want).every(([k, v]) => shown[k] === v), JSON.stringify(shown));
    check(`policy ${JSON.stringify(p)}: offers ${buttons}`, JSON.stringify(got) === JSON.stringify(buttons), JSON.stringify(got));
    await accessible(page, `verdict offering ${buttons}`);
    await shot(page, "verdict-" + buttons[0] + "-" + Object.values(shown).join("-"));
  }
  const approved = await click(page, "#approve");
  const approvals = (await api("/v1/clusters/c/events?limit=10")).events.filter((e) => e.kind === "approve");
  const digest = await page.$eval("#digest", (e) => e.textContent);
  check("approve with the token: the digest shown", approved.startsWith("200") && approvals.length === 1 && approvals[0].digest === digest,
    `${approved}; ${JSON.stringify(approvals)}`);
  check("approve asked first, naming the version and the digest", questions.at(-1) === `Approve the move of c to v2 by plan ${digest}?`, questions.at(-1));
  const after = await verdictItems(page);
  check("approved: the rule holds, activation offered", after.approvals === "ok" && JSON.stringify(await offered(page)) === '["activate"]' &&
    (await page.$eval("[data-item=approvals]", (e) => e.textContent)).includes("1 of 1 given (ops)"), JSON.stringify(after));
  // The verdict is live: a policy changed elsewhere reaches the page, and takes the write away
  let runs = await liveRuns(page);
  await policy({ approvals: 2 });
  await liveAfter(page, runs, "a policy change");
  const two = await page.$eval("[data-item=approvals]", (e) => [e.dataset.state, e.textContent]);
  check("live verdict: the new policy shown", two[0] === "warn" && two[1].includes("1 of 2 given (ops)") && (await offered(page)).length === 0, JSON.stringify(two));
  runs = await liveRuns(page);
  await policy({ approvals: 1 });
  await liveAfter(page, runs, "a policy change back");
  check("live verdict: activation offered again", JSON.stringify(await offered(page)) === '["activate"]', JSON.stringify(await offered(page)));
  // The server stays the judge: a page that missed a change (its watch stopped, as when a network
  // drops) gets the server's refusal, verbatim
  await page.evaluate(() => rkPanels.stop());
  await policy({ approvals: 2 });
  const want = await api("/v1/clusters/c/versions/2/activate", { method: "POST", headers: auth });
  const refused = await click(page, "#activate");
  check("a refusal shown verbatim", refused === `409 ${want.error.code}: ${want.error.message}`, refused);
  check("activate asked first, naming the version and the digest", questions.at(-1) === `Activate v2 of c by plan ${digest}?`, questions.at(-1));
  // Approved but over the budget: a forced activation with a reason
  await policy({ approvals: 1, max_moved_fraction: 0.01 });
  await open(page, "#/c/c/plan?from=1&to=2");
  await page.type("#force-reason", "capacity for the sale");
  const done = await click(page, "#force");
  const now = (await api("/v1/clusters")).clusters.find((c) => c.cluster === "c");
  check("forced with a reason", done.startsWith("200") && now.active_version === 2, `${done}; active ${now.active_version}`);
  check("the force asked first, with its reason", questions.at(-1).includes("past the policy's budget, recorded with the reason \"capacity for the sale\""), questions.at(-1));
  const force = (await api("/v1/clusters/c/events?limit=1")).events[0];
  check("the force's event and reason", force.kind === "force" && force.detail === "capacity for the sale", JSON.stringify(force));
  await selfAndWindow(page, policy, questions);
  // Chromium logs every answer >= 400 to fetch() as an error: exactly the refusals asked for.
  const logged = errors.filter((e) => /status of (403|409)/.test(e));
  check("the refusals are the only errors logged", logged.length === 2 && errors.length === 2, JSON.stringify(errors));
  errors.length = 0;
}

// A load profile stored with the cluster (docs/LOAD.md): the first screen says what moves in bytes
// and reads beside the hash space, with the profile's age, every number the API's; the byte budget
// is a rule of the verdict as the gate judges it (no profile, over, within). Skewed on purpose: a
// quarter of the ring holds 4 MB of the 7 and every read.
async function loadVerdict(page, policy, auth) {
  await policy({});
  await open(page, "#/c/c/plan?from=1&to=2");
  check("no profile: no bytes line, no bytes rule", !(await page.$("#headline-load")) && !("bytes" in (await verdictItems(page))), "");
  await policy({ max_moved_bytes: 1000 });
  await open(page, "#/c/c/plan?from=1&to=2");
  check("no profile under a byte budget: the rule refuses, force offered", (await verdictItems(page)).bytes === "bad" &&
    JSON.stringify(await offered(page)) === '["force"]', JSON.stringify(await verdictItems(page)));
  const at = Math.floor(Date.now() / 1000) - 300, bins = 4;
  const profile = { profile: 1, cluster: "c", hash: "fnv1a_32", data: "redis", measured_at: new Date(at * 1000).toISOString(),
    measured_epoch_s: at, seconds: 0.5, sample_rate: 1, servers: [{ id: "a", addr: "127.0.0.1:6379" }],
    load: { bits: 32, bins, sample_rate: 1, keys: [4000, 1000, 1000, 1000], bytes: [4e6, 1e6, 1e6, 1e6], requests: [900, 0, 0, 100] } };
  const put = await fetch(BASE + "/v1/clusters/c/load", { method: "PUT", headers: auth, body: JSON.stringify(profile) });
  check("a profile stored", put.status === 200, put.status);
  const plan = await api("/v1/clusters/c/plan?from=1&to=2&arcs=false");
  for (const [max, state, buttons] of [[null, "info", ["activate"]], [1e12, "ok", ["activate"]], [1, "bad", ["force"]]]) {
    await policy({ max_moved_bytes: max });
    await open(page, "#/c/c/plan?from=1&to=2");
    const shown = await verdictItems(page), text = await page.$eval("[data-item=bytes]", (e) => e.textContent);
    check(`byte budget ${max}: the rule ${state}, offers ${buttons}`, shown.bytes === state &&
      JSON.stringify(await offered(page)) === JSON.stringify(buttons), `${JSON.stringify(shown)} ${text}`);
    check(`byte budget ${max}: what moves and the profile's age said`, text.includes(`${rkFmt.bytes(plan.load.moving_bytes)} of 6.7 MiB move`) &&
      text.includes("of the reads change owner") && /profile measured 5 min ago/.test(text), text);
  }
  const line = await page.$eval("#headline-load", (e) => e.textContent);
  check("the first screen: bytes and reads beside the hash space", line.startsWith(`By bytes: ${rkFmt.bytes(plan.load.moving_bytes)} of 6.7 MiB move`) &&
    line.includes("By reads: ") && line.includes("Load profile measured " + profile.measured_at), line);
  await numbersMatch(page, "plan with a load profile", { plan }, "plan.load");
  const bottom = await page.$eval("#policy", (e) => e.getBoundingClientRect().bottom);
  check("with a profile, the rules still in the first screen (900 px)", bottom <= 900, bottom);
  await accessible(page, "verdict with a load profile");
  await shot(page, "verdict-load");
  await policy({ max_moved_bytes: null });
}

// The author's own approval under distinct_approver (its dry run refused: 403), then a migration
// window: opened by the activation, the only write offered is to finish it.
async function selfAndWindow(page, policy, questions) {
  await policy({ max_moved_fraction: 1, approvals: 1, distinct_approver: true });
  await open(page, "#/c/c/plan?from=2&to=3");
  const mine = await verdictItems(page), why = await page.$eval("#no-actions", (e) => e.textContent);
  check("self-approval: said, and no approval offered", mine.self === "warn" && mine.approvals === "warn" && (await offered(page)).length === 0 &&
    why.includes("you published it"), `${JSON.stringify(mine)} ${why}`);
  await shot(page, "verdict-self-approval");
  await policy({ approvals: 0, distinct_approver: false, migration_window: true });
  await open(page, "#/c/c/plan?from=2&to=3");
  check("window: activation opens one", (await verdictItems(page)).window === "ok", "");
  await click(page, "#activate");
  const open3 = await verdictItems(page);
  check("window open: said, and only its finish offered", open3.window === "bad" && JSON.stringify(await offered(page)) === '["finish"]',
    `${JSON.stringify(open3)} ${await offered(page)}`);
  await shot(page, "verdict-window-open");
  await open(page, "#/");
  const open4 = await badges(page, "c");
  check("clusters: the open window, as a badge", open4.window === "warn" &&
    (await page.$eval('[data-attention="c"] [data-badge=window]', (e) => e.textContent)).endsWith("window open: v2 → v3"), JSON.stringify(open4));
  await open(page, "#/c/c/plan?from=2&to=3");
  const finished = await click(page, "#finish");
  const ring = await api("/v1/clusters/c/clients?limit=1");
  check("window finished from the page", finished.startsWith("200") && ring.summary.previous === null && questions.at(-1).startsWith("Finish the migration window v2 → v3 of c"),
    `${finished} ${JSON.stringify(ring.summary)} ${questions.at(-1)}`);
  await policy({ max_moved_fraction: 1, max_balance_after: null, approvals: 0, distinct_approver: false, migration_window: false });
}

// A rollout (docs/MIGRATE.md, "Rollouts") on a cluster of its own: its steps and numbers as the API
// has them, and its writes: approve (by its digest), start, pause, each asked first.
async function rolloutView(page, errors) {
  const auth = { Authorization: "Bearer " + TOKEN, "Content-Type": "application/json" };
  const node = (i) => ({ id: `r${i}`, addr: `10.9.0.${i}:11211`, weight: 1 });
  const topo = (n) => ({ hash: "xxh3_64", vnode_factor: 40, nodes: [0, 1, 2, 3, 4].slice(0, n).map(node) });
  await fetch(BASE + "/v1/clusters/ro/versions?activate=true", { method: "POST", headers: auth, body: JSON.stringify(topo(5)) });
  // a load profile stored first: the review weighs every step by it (docs/LOAD.md, "Rollouts by load")
  const at = Math.floor(Date.now() / 1000) - 600;
  const profile = { profile: 1, cluster: "ro", hash: "xxh3_64", data: "redis", measured_at: new Date(at * 1000).toISOString(),
    measured_epoch_s: at, seconds: 0.5, sample_rate: 1, servers: [], load: { bits: 64, bins: 4, sample_rate: 1,
      keys: [10, 20, 30, 40], bytes: [1e6, 2e6, 3e6, 4e6], requests: [0, 0, 0, 0] } };
  await fetch(BASE + "/v1/clusters/ro/load", { method: "PUT", headers: auth, body: JSON.stringify(profile) });
  const made = await api("/v1/clusters/ro/rollouts", { method: "POST", headers: auth, body: JSON.stringify({ target: topo(4), steps: 4 }) });
  check("rollout: made through the API", made.state === "review" && made.steps.length === 4, JSON.stringify(made).slice(0, 200));
  check("rollout: every step weighed by the profile", made.load && made.steps.every((s) => s.load && s.load.moving_bytes >= 0) &&
    Math.abs(made.steps.reduce((a, s) => a + s.load.moving_bytes, 0) - made.load.moving_bytes) < 1, JSON.stringify(made.load));
  await open(page, "#/c/ro");
  const rows = await page.$$eval("[data-step-state]", (trs) => trs.map((t) => t.dataset.stepState));
  await open(page, "#/");
  const waiting = await badges(page, "ro");
  check("clusters: the rollout waiting, as a badge", waiting.rollout === "warn" &&
    (await page.$eval('[data-attention="ro"] [data-badge=rollout]', (e) => e.textContent)).endsWith(`rollout ${made.id} waiting for approval`), JSON.stringify(waiting));
  await open(page, "#/c/ro");
  check("rollout: a row per step, each pending", rows.length === 4 && rows.every((x) => x === "pending"), JSON.stringify(rows));
  const versions = (await api("/v1/clusters/ro/versions?limit=1000")).versions;
  const picture = await api("/v1/clusters/ro/versions/1/picture"), ring = await api("/v1/clusters/ro/plan?from=1&to=1&arcs=false");
  await numbersMatch(page, "rollout", { rollout: made, versions, picture, ring });
  const said = await page.$eval("#rollout-load", (e) => e.textContent);
  check("rollout: the bytes by the load profile said", said.startsWith(`By the load profile: ${rkFmt.bytes(made.load.moving_bytes)} of 9.5 MiB move`) &&
    said.includes("profile measured 10 min before the review"), said);
  await accessible(page, "rollout");
  await shot(page, "rollout-review");
  const questions = [];
  const asked = (d) => questions.push(d.message());
  page.on("dialog", asked);
  for (const [button, state] of [["#rollout-approve", "approved"], ["#rollout-start", "running"], ["#rollout-pause", "paused"]]) {
    await page.evaluate(() => document.getElementById("view").removeAttribute("data-ready"));
    // clicked in the page, whichever element holds the id then: a running rollout's panel is
    // drawn again by itself as its steps move
    await page.$eval(button, (b) => b.click());
    await ready(page, "#/c/ro");
    // the view may have been made ready by the running rollout's own redraw, drawn before the
    // write's answer came: wait (bounded) for the panel the write draws
    await page.waitForFunction((st) => document.getElementById("rollout-state")?.dataset.state === st, { timeout: 10000 }, state).catch(() => {});
    const shown = await page.$eval("#rollout-state", (e) => e.dataset.state);
    check(`rollout: ${button} leaves it ${state}`, shown === state && (await api(`/v1/clusters/ro/rollouts/${made.id}`)).state === state, shown);
  }
  page.off("dialog", asked);
  check("rollout: the approval asked first, naming the digest", questions[0] === `Approve rollout ${made.id} of ro by digest ${made.digest}?`, questions[0]);
  check("rollout: start and pause asked first", questions[1] === `Start rollout ${made.id} of ro?` && questions[2] === `Pause rollout ${made.id} of ro?`, JSON.stringify(questions));
  const resume = await page.$("#rollout-resume");
  check("rollout: paused, it offers resume", resume !== null, "no resume button");
  await shot(page, "rollout-paused");
  await setToken(page, "");
  await writesNeedToken(page, "rollout", ["rollout-resume", "rollout-abort"]);
  await setToken(page, TOKEN);
  await fetch(BASE + `/v1/clusters/ro/rollouts/${made.id}/abort`, { method: "POST", headers: auth });
  check("rollout: no console errors", errors.length === 0, JSON.stringify(errors));
}

// Without a token, the panel's writes are shown disabled, and the note beside them says why.
async function writesNeedToken(page, panel, ids) {
  const shown = await page.$$eval(`#panel-${panel} button`, (bs) => bs.map((b) => [b.id, b.disabled]));
  const note = await page.$eval(`#panel-${panel} .needs-token`, (e) => e.textContent).catch(() => "");
  check(`${panel}: no token, its writes disabled`, ids.every((id) => shown.some(([b, off]) => b === id && off)) && shown.every(([, off]) => off),
    JSON.stringify(shown));
  check(`${panel}: no token, said`, note === "needs a token with the ops role: paste one above", note);
  await accessible(page, `${panel} without a token`);
}

// A cluster's live panels: the events and the fleet as the API has them, then a publish, a client
// and a migration job's pause, resume and throttle made elsewhere reach the open page by the long
// poll of GET .../changes, without a reload; the job's writes from the page, each asked first.
async function livePanels(page, errors) {
  const auth = { Authorization: "Bearer " + TOKEN, "Content-Type": "application/json" };
  const node = (i) => ({ id: `m${i}`, addr: `127.0.0.1:${21000 + i}`, weight: 1 });
  const topo = (n) => ({ hash: "xxh3_64", vnode_factor: 40, data: "memcached", nodes: [0, 1, 2, 3].slice(0, n).map(node) });
  const post = (p, body) => fetch(BASE + p, { method: "POST", headers: auth, body: body === undefined ? undefined : JSON.stringify(body) });
  await post("/v1/clusters/mj/versions?activate=true", topo(3));
  await open(page, "#/c/mj");
  const hidden = await page.$eval("#panel-migration", (e) => e.hidden);
  check("live: no job, no migration panel", hidden, "shown");
  const events = (await api("/v1/clusters/mj/events?limit=20")).events;
  const rows = await page.$$eval("#events tbody tr", (trs) => trs.map((t) => [Number(t.dataset.event), t.dataset.kind]));
  check("live: the events as the API lists them", JSON.stringify(rows) === JSON.stringify(events.map((e) => [e.event, e.kind])), JSON.stringify(rows));
  let runs = await liveRuns(page);
  await post("/v1/clusters/mj/versions", topo(4));
  const ms = await liveAfter(page, runs, "a publish");
  console.log(`live: a publish reached the open page in ${ms} ms`);
  const kinds = await page.$$eval("#events tbody tr", (trs) => trs.map((t) => t.dataset.kind));
  check("live: the new publish listed first", kinds[0] === "publish" && kinds.length === events.length + 1, JSON.stringify(kinds));
  const listed = await page.$$eval("#versions tbody tr", (trs) => trs.length);
  check("live: the new version listed", listed === 2, String(listed));
  runs = await liveRuns(page);
  await fetch(BASE + "/v1/clusters/mj/ring", { headers: { "RK-Client": "straggler-1", Authorization: "Bearer " + TOKEN } });
  await liveAfter(page, runs, "a client");
  const fleet = await page.$eval("#fleet-summary", (e) => e.textContent);
  check("live: the client counted", fleet.startsWith("no: 0 of 1 hold v1, 1 offered"), fleet);
  check("live: the straggler listed", (await page.$$eval("#fleet-behind [data-client]", (r) => r.map((x) => x.dataset.client))).includes("straggler-1"), "");
  runs = await liveRuns(page);
  await fetch(BASE + "/v1/clusters/mj/ring", { headers: { "RK-Client": "nginx@edge-1", "User-Agent": "ringkeeper-agent/0.2.0 (nginx) libringkeeper/0.2.0", Authorization: "Bearer " + TOKEN } });
  await liveAfter(page, runs, "a proxy's agent");
  const proxies = await page.$$eval("#fleet-proxies tbody tr", (r) => r.map((x) => [x.dataset.client, x.dataset.proxy]));
  check("live: the proxy's agent in the proxies table, with its proxy", JSON.stringify(proxies) === JSON.stringify([["nginx@edge-1", "nginx"]]), JSON.stringify(proxies));
  const kinds2 = await page.$$eval("#fleet-behind tbody tr", (r) => r.map((x) => [x.dataset.client, x.children[1].textContent]));
  check("live: each client's kind among the stragglers", kinds2.some(([c, k]) => c === "nginx@edge-1" && k === "nginx") && kinds2.some(([c, k]) => c === "straggler-1" && k === "application"), JSON.stringify(kinds2));
  runs = await liveRuns(page);
  const job = await (await post("/v1/clusters/mj/migration", { mode: "before_cutover", to: 2, throttle: { keys_per_s: 100, bytes_per_s: 0 } })).json();
  await liveAfter(page, runs, "a job");
  check("live: the job shown", await page.$eval("#migration-state", (e) => e.dataset.state) === "copying", JSON.stringify(job).slice(0, 200));
  await numbersMatch(page, "live migration", { migration: await api("/v1/clusters/mj/migration") }, "migration.");
  await setToken(page, "");
  await writesNeedToken(page, "migration", ["migration-pause", "throttle"]);
  await open(page, "#/");
  const copying = await badges(page, "mj");
  check("clusters: the job copying, and the change staged", copying.job === "info" && copying.staged === "warn", JSON.stringify(copying));
  await accessible(page, "clusters with badges");
  await shot(page, "clusters-attention");
  await open(page, "#/c/mj");
  await setToken(page, TOKEN);
  await accessible(page, "live panels");
  await shot(page, "cluster-live");
  const questions = [];
  const asked = (d) => questions.push(d.message()); // accepted by the handler activate() left
  page.on("dialog", asked);
  for (const [button, state] of [["#migration-pause", "paused"], ["#migration-resume", "copying"]]) {
    await page.evaluate(() => document.getElementById("view").removeAttribute("data-ready"));
    await page.click(button);
    await ready(page, "#/c/mj");
    const shown = await page.$eval("#migration-state", (e) => e.dataset.state);
    check(`live: ${button} leaves the job ${state}`, shown === state && (await api("/v1/clusters/mj/migration")).state === state, shown);
  }
  check("live: pause asked first, naming the job", questions[0] === `Pause migration job ${job.id} of mj (v1 → v2)?`, questions[0]);
  await page.$eval("#throttle-keys", (e) => (e.value = ""));
  await page.type("#throttle-keys", "2500");
  await page.evaluate(() => document.getElementById("view").removeAttribute("data-ready"));
  await page.click("#throttle");
  await ready(page, "#/c/mj");
  check("live: the throttle set from the page", (await api("/v1/clusters/mj/migration")).throttle.keys_per_s === 2500, questions.at(-1));
  page.off("dialog", asked);
  runs = await liveRuns(page);
  await fetch(BASE + "/v1/clusters/mj/migration/pause", { method: "POST", headers: auth, body: "{}" });
  await liveAfter(page, runs, "a pause made elsewhere");
  check("live: a pause made elsewhere shown", await page.$eval("#migration-state", (e) => e.dataset.state) === "paused", "");
  await fetch(BASE + "/v1/clusters/mj/migration/cancel", { method: "POST", headers: auth, body: "{}" });
  check("live panels: no console errors", errors.length === 0, JSON.stringify(errors));
}

module.exports = { activate, rolloutView, livePanels };
