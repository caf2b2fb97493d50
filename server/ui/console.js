/* console.js — the operator console's views and routes: the clusters, a cluster (its live panels,
 * versions and ring), and the plan between two versions with its verdict. It reads only the public JSON API (docs/API.md) and writes
 * with the token the operator pastes, kept in sessionStorage only. Everything from the server goes
 * into the page as text (textContent), never as markup. */
"use strict";

const view = document.getElementById("view");
let shown = 0; /* counts the views drawn: work of a view that is gone must not touch the page */

function show(title, ...parts) {
  document.title = title + " — ringkeeper console";
  view.replaceChildren(h("h1", {}, title), ...parts.flat(Infinity));
  window.scrollTo(0, 0); /* a view starts at its first screen, the verdict's */
}

/* ---- clusters ---- */

/* A page of MAX_ROWS clusters by name (GET /v1/clusters pages: a store may hold --max-clusters of
 * them), from the one after ?after=NAME, with a link to the next page while there is one. */
async function clustersView(q) {
  const after = q.get("after");
  const page = await get(`/v1/clusters?limit=${MAX_ROWS}` + (after ? "&after=" + encodeURIComponent(after) : ""));
  const list = page.clusters;
  const rows = await Promise.all(list.map(async (c, i) => {
    const path = clusterPath(c.cluster);
    const [versions, clients, rollouts, job] = await Promise.all([get(path + "/versions?limit=1000"),
      get(path + "/clients?limit=1"), get(path + "/rollouts"), rkPanels.job(c.cluster)]);
    const staged = versions.versions.filter((v) => v.state === "staged").length;
    const badges = rkAttention({ staged: newerStaged(versions.versions), fleet: clients.summary, rollout: rollouts.rollouts[0], job });
    return h("tr", {}, h("td", {}, h("a", { href: "#/c/" + encodeURIComponent(c.cluster) }, c.cluster)),
      h("td", {}, attentionList(c.cluster, badges)),
      h("td", { class: "n" }, c.active_version === null ? "none" : num(`clusters.${i}.active_version`, c.active_version)),
      h("td", { class: "n" }, num(`clusters.${i}.latest_version`, c.latest_version)),
      h("td", { class: "n", "data-staged": c.cluster }, String(staged)),
      h("td", { "data-clients": c.cluster }, convergedText(clients.summary)));
  }));
  const pages = h("p", { class: "note" },
    after ? [h("a", { href: "#/", id: "first-page" }, "first page"), " "] : "",
    page.next_after ? h("a", { href: "#/?after=" + encodeURIComponent(page.next_after), id: "next-page" },
      `next page, after ${page.next_after}`) : "");
  show("Clusters", list.length ? [table(["cluster", "needs attention", "active", "latest", "staged", "clients converged"], rows), pages]
    : after ? [h("p", {}, `No clusters after ${after}.`), pages]
    : h("p", { id: "no-clusters" }, "No clusters yet: publish a topology to a cluster of your naming, and activate it:",
      h("br", {}), h("code", {}, `ringkeeper publish topology.json --server ${location.origin} --cluster NAME --activate`)));
}

/* A cluster's badges as a list, each a mark and words (the colour only repeats them); a cluster
 * with none says so, so that an empty cell is never read as "not known". */
function attentionList(c, badges) {
  if (!badges.length) return h("span", { "data-attention": c, class: "calm" }, h("span", { class: "mark", "aria-hidden": "true" }, "✓"), "nothing waiting");
  return h("ul", { class: "badges", "data-attention": c }, badges.map((b) => h("li", { class: "badge " + b.level, "data-badge": b.key },
    h("span", { class: "mark", "aria-hidden": "true" }, MARK[b.level]), h("span", { class: "visually-hidden" }, `${LEVEL[b.level]}: `), b.text)));
}

/* ---- a cluster ---- */

/* A table of plan.nodes: id, the shares of `sides` and ideal_after as numbers, and a bar per side
 * against the ideal (a black mark), the first side pale when there are two. The most changed nodes
 * first (with two sides), or those furthest from their ideal; the first MAX_ROWS of them. */
function sharesTable(plan, sides, prefix, head) {
  const nodes = plan.nodes, top = Math.max(1e-12, ...nodes.map((n) => Math.max(n.ideal_after, ...sides.map((s) => n[s]))));
  const score = sides.length > 1 ? (n) => Math.abs(n[sides[1]] - n[sides[0]]) : (n) => Math.abs(n[sides[0]] - n.ideal_after);
  const order = nodes.map((_, i) => i).sort((a, b) => score(nodes[b]) - score(nodes[a]) || a - b);
  const bar = (n, s, k) => h("span", { class: sides.length > 1 && k === 0 ? "bar before" : "bar", title: s, style: `width:${(200 * n[s]) / top}px` });
  return table(head, order, (i) => h("tr", {}, h("td", {}, swatch(nodes[i].id), " ", nodes[i].id),
    sides.map((s) => h("td", { class: "n" }, num(`${prefix}nodes.${i}.${s}`, nodes[i][s], "pct"))),
    h("td", { class: "n" }, num(`${prefix}nodes.${i}.ideal_after`, nodes[i].ideal_after, "pct")),
    h("td", { class: "bars" }, sides.map((s, k) => [bar(nodes[i], s, k), h("br", {})]),
      h("span", { class: "bar ideal", title: "ideal", style: `margin-left:${(200 * nodes[i].ideal_after) / top - 2}px` }))),
  sides.length > 1 ? ": the most changed nodes" : ": the nodes furthest from their ideal share");
}

/* ---- ring pictures: drawn from the server's bins, arcs asked of the server ---- */

/* A ring circle of the picture: version v's bins, its nodes' ids by rank, and where to ask for its arcs. */
function ringLayer(c, v, label, radius, width, bits, runs, ids) {
  return { label, radius, width, bits, ids, bins: rkDraw.bins(runs), arcs: versionPath(c, v) + "/arc" };
}

function svgLink(href, what) {
  return h("a", { href, download: "", id: "svg-link" }, `download ${what} as SVG (for a ticket or a runbook)`);
}

/* A cluster's versions, newest first, each with a link to its plan from the active one. */
function versionsTable(c, versions) {
  const active = versions.find((v) => v.state === "active");
  return table(["version", "state", "author", "created", "activated", "comment", "fingerprint", "plan"],
    versions, (v, i) => h("tr", {}, h("td", { class: "n" }, num(`versions.${i}.version`, v.version)),
      h("td", {}, v.state), h("td", {}, v.author), h("td", {}, v.created_at), h("td", {}, v.activated_at || ""),
      h("td", {}, v.comment || ""), h("td", {}, v.fingerprint),
      h("td", {}, active && v.version !== active.version
        ? h("a", { href: `#/c/${encodeURIComponent(c)}/plan?from=${active.version}&to=${v.version}` },
          `plan v${active.version} → v${v.version}`) : "")));
}

/* The link to review the change staged, from the active version to the newest staged one; none
 * when nothing newer than the active version is staged, or when none is active (nothing to compare). */
function reviewLink(c, versions) {
  const active = versions.find((v) => v.state === "active"), next = newerStaged(versions)[0];
  if (!active || !next) return "";
  return h("a", { id: "review-plan", href: `#/c/${encodeURIComponent(c)}/plan?from=${active.version}&to=${next.version}` },
    `review the plan: v${active.version} → v${next.version} (staged)`);
}

async function clusterView(c) {
  const versions = (await get(clusterPath(c) + "/versions?limit=1000")).versions;
  const active = versions.find((v) => v.state === "active");
  /* the versions stay live too; another active version is another ring: the view is drawn again */
  const review = h("p", { id: "review" }, reviewLink(c, versions));
  const mine = shown, listed = rkPanels.panel("versions", "Versions", async () => {
    const now = (await get(clusterPath(c) + "/versions?limit=1000")).versions, act = now.find((v) => v.state === "active");
    if ((act && act.version) !== (active && active.version) && mine === shown) window.dispatchEvent(new HashChangeEvent("hashchange"));
    review.replaceChildren(reviewLink(c, now));
    return versionsTable(c, now);
  });
  const parts = [review, listed];
  let rest;
  if (active) {
    const q = `?from=${active.version}&to=${active.version}`, picture = await get(versionPath(c, active.version) + "/picture");
    const ids = [];
    for (const n of picture.nodes) ids[n.rank] = n.id;
    const layer = ringLayer(c, active.version, `v${active.version}`, 230, 44, picture.bits, picture.runs, ids);
    const shares = h("div", { id: "shares" }, h("p", { class: "note" }, "loading the shares…"));
    parts.push(h("h2", {}, `Active ring: v${active.version}`),
      h("p", {}, "nodes ", num("picture.node_count", picture.node_count, "count"), ", points ", num("picture.points", picture.points, "count")),
      rkDraw.picture([layer], `the ring of v${active.version}, arcs coloured by node`),
      h("p", {}, svgLink(clusterPath(c) + "/plan" + q + "&format=svg", "this ring")),
      h("h2", {}, "Shares"), shares);
    /* The shares come from the plan of the version to itself, which costs the server seconds on a
     * 100000-node ring: the ring is drawn first, and this fills in when it comes. */
    rest = call("GET", clusterPath(c) + "/plan" + q + "&arcs=false").then((r) => {
      const ring = r.body, refused = r.status === 422 && ring.error && ring.error.code === "plan_too_large";
      /* a ring of more nodes than the server's --max-plan-rows has no share table: say so, keep the rest */
      if (refused) return shares.replaceChildren(h("p", { class: "message error", id: "shares-refused" }, errorText(r)));
      if (r.status !== 200) throw new Error(errorText(r));
      shares.replaceChildren(h("p", {}, "balance (share / ideal): max ", num("ring.balance.after.max", ring.balance.after.max, "ratio"),
        ", min ", num("ring.balance.after.min", ring.balance.after.min, "ratio")),
      ...sharesTable(ring, ["share_after"], "ring.", ["node", "share", "ideal", "share, ideal (mark)"]));
    });
  } else {
    parts.push(h("p", {}, "No version is active yet."));
  }
  /* what moves now first: the rollout and the job (each hidden when there is none), the fleet, the events */
  const panels = [rkPanels.rollout(c), rkPanels.migration(c), rkPanels.fleet(c), rkPanels.events(c)];
  parts.splice(1, 0, ...panels);
  panels.push(listed);
  show(`Cluster ${c}`, ...parts);
  /* not a promise itself, which the caller's await would wait for */
  return { rest: Promise.all([rest, rkPanels.live(c, panels.map((p) => p.fill))]) };
}

/* ---- a plan ---- */

function versionSelect(id, versions, chosen) {
  return h("select", { id }, versions.map((v) => {
    const o = h("option", { value: v.version }, `v${v.version} (${v.state})`);
    o.selected = v.version === chosen;
    return o;
  }));
}

const TOP = 20; /* ranked rows before one "others" row: readable at 20 nodes and at 100,000 */

/* The transfers, largest first, each with a bar against the largest; past TOP, one "others" row,
 * which says its part of what moves rather than drawing a bar off the scale. */
function transfersPart(plan) {
  const t = plan.transfers, order = t.map((_, i) => i).sort((a, b) => t[b].fraction - t[a].fraction || a - b);
  const rest = order.slice(TOP), othersF = rkSum(rest, (i) => t[i].fraction), big = t[order[0]].fraction;
  const bar = (f) => h("span", { class: "bar", style: `width:${Math.max(1, (240 * f) / big)}px` });
  const row = (i) => h("tr", {}, h("td", { class: "id" }, swatch(t[i].from), " ", t[i].from), h("td", { class: "id" }, swatch(t[i].to), " ", t[i].to),
    h("td", { class: "n" }, num(`plan.transfers.${i}.fraction`, t[i].fraction, "pct")),
    h("td", { class: "n" }, num(`plan.transfers.${i}.arcs`, t[i].arcs, "count")), h("td", {}, bar(t[i].fraction)));
  const othersArcs = rkSum(rest, (i) => t[i].arcs);
  return h("table", { id: "transfers" }, h("thead", {}, h("tr", {}, ["from", "to", "share of the space", "arcs", "against the largest"].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", {}, order.slice(0, TOP).map(row), rest.length ? h("tr", { id: "transfers-others" }, h("td", { colspan: "2" }, swatch(null), ` ${rkFmt.count(rest.length)} smaller transfers`),
      h("td", { class: "n" }, rkFmt.pct(othersF)), h("td", { class: "n" }, rkFmt.count(othersArcs)),
      h("td", {}, `${rkFmt.pct(othersF / plan.moved_fraction)} of what moves`)) : ""));
}

/* The self-checks folded into one line that says whether they hold; the table on demand, open when
 * one fails. */
function selfCheckPart(plan) {
  const checks = rkSelfCheck(plan), count = (s) => checks.filter((x) => x.status === s).length;
  const failed = count("fail"), warned = count("warn"), skipped = count("skip");
  const line = failed ? `${failed} of ${checks.length} self-checks fail: do not cut over on this plan`
    : `${count("pass")} invariants hold` + (warned ? `, ${warned} warning${warned > 1 ? "s" : ""} to look at` : "") +
      (skipped ? `, ${skipped} not checked` : "") + " (recomputed in this page)";
  const state = failed ? "bad" : warned ? "warn" : "ok"; /* the worst check's: a warning is not a pass */
  const d = h("details", { id: "selfcheck-details" }, h("summary", { id: "selfcheck-summary", class: { bad: "fail", warn: "warn", ok: "pass" }[state] },
    h("span", { class: "mark", "aria-hidden": "true" }, MARK[state]), line),
    h("table", { id: "selfcheck" }, checks.map((x) => h("tr", { "data-status": x.status },
      h("td", {}, x.name), h("td", { class: x.status }, x.status), h("td", {}, x.detail)))));
  d.open = failed > 0;
  return d;
}

/* What the token may do, asked of the server without recording anything: an approval's dry run says
 * who the token is and whether it may approve this plan (docs/API.md). Not asked without a token. */
async function whoAmI(c, plan, author) {
  if (!token()) return { may: false, name: null, why: "No token kept: paste one above to approve or activate (any text, on a server without tokens)." };
  const r = await call("POST", `${versionPath(c, plan.to.version)}/approve`, { digest: plan.digest, dry_run: true });
  const code = r.body && r.body.error && r.body.error.code;
  if (r.status === 200) return { may: true, name: r.body.approver, approve: true };
  if (code === "self_approval") return { may: true, name: author, approve: false, approveWhy: "you published it, and the policy wants another approver." };
  if (r.status === 401 || r.status === 403) return { may: false, name: null, why: errorText(r) };
  return { may: true, name: null, approve: false, approveWhy: errorText(r) };
}

const MARK = { ok: "✓", warn: "!", bad: "✗", info: "·" };
const LEVEL = { warn: "needs a look", bad: "problem", info: "in progress" }; /* said to a screen reader beside the mark */
let flash = null; /* what the last write said, for the view drawn after it */

/* The writes the verdict allows, each confirmed first, naming the version and the digest; after one,
 * the view is drawn again with the server's answer. `said` ({cls, text} or null) is what the last
 * write of this view said, kept across its live refreshes. */
function actionsPart(c, plan, verdict, fleet, said) {
  const out = h("div", { id: "action-result", class: "message" + (said.text ? " " + said.cls : ""), role: "status" }, said.text || "");
  const to = plan.to.version, path = versionPath(c, to), of = ` by plan ${plan.digest}`;
  const write = async (question, route, body) => {
    if (!confirm(question)) return;
    const r = await call("POST", route, body);
    if (r.status >= 300) {
      Object.assign(said, { cls: "error", text: errorText(r) });
      out.className = "message error";
      out.textContent = said.text;
      return;
    }
    flash = { cls: "ok", text: `${r.status}: done` + (r.body.state ? ` (v${r.body.version} ${r.body.state})` : "") };
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  };
  const buttons = {
    approve: () => h("button", { id: "approve", onclick: () => write(`Approve the move of ${c} to v${to}${of}?`, path + "/approve", { digest: plan.digest }) }, `approve v${to}`),
    activate: () => h("button", { id: "activate", onclick: () => write(`Activate v${to} of ${c}${of}?`, path + "/activate") }, `activate v${to}`),
    force: () => h("form", { id: "force-form", onsubmit: (ev) => {
      ev.preventDefault();
      const reason = document.getElementById("force-reason").value.trim();
      write(`Activate v${to} of ${c}${of} past the policy's budget, recorded with the reason "${reason}"?`, path + "/activate", { force: true, reason });
    } }, h("label", { for: "force-reason" }, "reason "), h("input", { id: "force-reason", size: "40", required: true }), " ",
    h("button", { id: "force", type: "submit" }, `activate v${to} past the budget`)),
    finish: () => h("button", { id: "finish", onclick: () => write(`Finish the migration window v${fleet.previous} → v${fleet.active} of ${c}: clients drop v${fleet.previous}?`,
      clusterPath(c) + "/migration/finish", {}) }, `finish the window v${fleet.previous} → v${fleet.active}`),
  };
  return h("div", { id: "next" }, h("p", {}, verdict.actions.map((a) => [buttons[a](), " "]),
    verdict.why ? h("span", { id: "no-actions" }, verdict.why) : ""), out);
}

/* Beside the hash space, what the cluster's load profile says the plan moves: bytes, and reads where
 * the servers counted them, with the balance after by each and the profile's age. */
function loadLine(plan) {
  const l = plan.load;
  if (!l) return "";
  const reads = l.requests > 0 ? [" By reads: ", rkFmt.pct(l.moving_requests / l.requests), " change owner; the most loaded node then holds ",
    num("plan.load.requests_balance_after", l.requests_balance_after, "ratio"), " its weight's share, ",
    num("plan.load.requests_over_mean_after", l.requests_over_mean_after, "ratio"), " the mean."] : [];
  const p = l.profile || {};
  return h("p", { id: "headline-load", class: "headline" }, "By bytes: ", num("plan.load.moving_bytes", l.moving_bytes, "bytes"), " of ",
    num("plan.load.bytes", l.bytes, "bytes"), " move (", rkFmt.pct(l.bytes ? l.moving_bytes / l.bytes : 0), "); the most loaded node then holds ",
    num("plan.load.bytes_balance_after", l.bytes_balance_after, "ratio"), " its weight's share (",
    num("plan.load.bytes_balance_before", l.bytes_balance_before, "ratio"), " before), ",
    num("plan.load.bytes_over_mean_after", l.bytes_over_mean_after, "ratio"), " the mean (",
    num("plan.load.bytes_over_mean_before", l.bytes_over_mean_before, "ratio"), " before).", ...reads,
    h("span", { id: "profile-age", class: "note" }, ` Load profile measured ${p.measured_at || "at an unknown time"}`,
      p.age_s !== undefined ? `, ${rkFmt.age(p.age_s)} ago` : "", p.sample_rate !== undefined ? `, sample rate ${p.sample_rate}` : "", "."));
}

/* The first screen: the plan's cost against the minimum, each rule of the policy in its state, and
 * what may be done next. */
function verdictPart(c, plan, verdict, fleet, said) {
  const ratio = plan.minimal_fraction > 0 ? [", ", h("span", { id: "moved-ratio" }, rkFmt.ratio(plan.moved_fraction / plan.minimal_fraction)), " the minimum "]
    : [", the minimum "];
  const headline = plan.moved_fraction === 0 ? h("p", { id: "headline", class: "headline" }, "Nothing moves.")
    : h("p", { id: "headline", class: "headline" }, num("plan.moved_fraction", plan.moved_fraction, "pct"), " of the keys move", ...ratio,
      num("plan.minimal_fraction", plan.minimal_fraction, "pct"), "; the most loaded node then holds ",
      num("plan.balance.after.max", plan.balance.after.max, "ratio"), " its ideal share.");
  return h("section", { id: "verdict", "aria-label": "verdict" }, headline, loadLine(plan),
    h("ul", { id: "policy", class: "policy" }, verdict.items.map((x) => h("li", { "data-item": x.key, "data-state": x.state },
      h("span", { class: "mark", "aria-hidden": "true" }, MARK[x.state]), h("span", { class: "visually-hidden" }, `${x.state}: `),
      h("b", {}, x.title), " ", x.text))),
    actionsPart(c, plan, verdict, fleet, said));
}

/* The whole plan (nodes and arcs) for the parts below the verdict: {plan} or, when the server
 * refuses one that big (--max-plan-rows), {refused: its words} after trying without the arcs. */
async function fetchPlan(base) {
  let r = await call("GET", base);
  const big = (x) => x.status === 422 && x.body.error && x.body.error.code === "plan_too_large";
  if (big(r)) r = await call("GET", base + "&arcs=false"); /* the arcs are what is big: check the rest */
  if (big(r)) return { refused: errorText(r) };
  if (r.status !== 200) throw new Error(errorText(r));
  return { plan: r.body };
}

/* The plan's picture (the server's circles, pic): the ring before (outer), the moving arcs in
 * their destination's colour, the ring after (inner), as plan_svg.c lays them out. The moving
 * arcs pointed at are the plan's own, when it lists them. */
function planPicture(c, plan, pic) {
  const { from, to, bits, circles } = pic, ids = plan.nodes.map((n) => n.id);
  const picture = rkDraw.picture([ringLayer(c, from, `before: v${from}`, 250, 30, bits, circles.before, ids),
    { label: "moving", radius: 214, width: 14, bits, ids, bins: rkDraw.bins(circles.moving), moves: plan.arcs || [] },
    ringLayer(c, to, `after: v${to}`, 178, 30, bits, circles.after, ids)],
  `plan v${from} → v${to}: outer ring before, inner ring after, between them the moving arcs in the colour of the node they move to`);
  return [h("p", { class: "note" }, "outer ring: before; inner ring: after; between them the arcs that move, in the colour of the node they move to. ",
    "Point at an arc, or focus the picture and use the arrow keys, to see its range and owner.",
    plan.arcs ? "" : " This plan has too many arcs to list here: the moving ones are drawn but not pointed at."), picture];
}

function planForm(versions, from, to, step, go) {
  return h("form", { id: "plan-form", onsubmit: (ev) => { ev.preventDefault(); go(); } },
    h("label", { for: "from" }, "from "), versionSelect("from", versions, from), " ",
    h("label", { for: "to" }, "to "), versionSelect("to", versions, to), " ",
    h("label", { for: "step" }, "steps of at most "),
    h("input", { id: "step", type: "number", min: "0.001", max: "1", step: "any", value: step || "", placeholder: "e.g. 0.05", size: "6" }), " ",
    h("button", { id: "go", type: "submit" }, "show plan"));
}

/* What hash % N would move, only where the node count changes: with as many nodes before as after
 * (a replacement, a weight change) modulo keeps every key on its index, which says nothing. */
function moduloPart(plan) {
  const live = (p) => plan.nodes.filter((n) => n[p] > 0).length, n = live("weight_before"), m = live("weight_after");
  if (n === m || !n || !m) return "";
  return h("p", { id: "modulo", class: "note" }, `For comparison: a fleet sharded by hash % N going from ${n} to ${m} servers would move `,
    rkFmt.pct(rkModuloMoved(n, m)), " of its keys (1 − min(N, M) / lcm(N, M)), against ", rkFmt.pct(plan.moved_fraction), " here.");
}

/* Everything the verdict weighs, fetched side by side: the policy, the approvals among the events,
 * the fleet report, the latest rollout. */
async function planContext(c) {
  const [policy, events, clients, rollouts] = await Promise.all([get(clusterPath(c) + "/policy"),
    get(clusterPath(c) + "/events?limit=1000"), get(clusterPath(c) + "/clients?limit=100"), get(clusterPath(c) + "/rollouts")]);
  return { policy, events: events.events, fleet: clients.summary, clients: clients.clients, rollout: rollouts.rollouts[0] };
}

/* The parts a whole plan fills in below the verdict: the self-checks, the modulo comparison, the
 * shares, the rings; or the server's refusal of a plan that big, the verdict standing. */
function planDetails(c, full, pic, base, slots) {
  if (full.refused) return slots.checks.replaceChildren(h("p", { class: "message error", id: "plan-refused" }, full.refused));
  const plan = full.plan;
  slots.checks.replaceChildren(selfCheckPart(plan));
  slots.modulo.replaceChildren(moduloPart(plan));
  slots.shares.replaceChildren(...sharesTable(plan, ["share_before", "share_after"], "plan.", ["node", "before", "after", "ideal after", "before (pale), after, ideal (mark)"]));
  slots.rings.replaceChildren(...planPicture(c, plan, pic), h("p", {}, svgLink(base + "&format=svg", "this plan")));
  window.rkPlan = plan; /* the document the page shows, for a look from the developer tools */
}

/* A plan: its verdict first, from the plan's summary (nodes=false: milliseconds on a 100000-node
 * ring, where the whole JSON is 17 MB), then what the whole plan fills in. */
async function planView(c, query) {
  const versions = (await get(clusterPath(c) + "/versions?limit=1000")).versions;
  if (!versions.length) throw new Error(`cluster ${c} has no versions`);
  const active = versions.find((v) => v.state === "active");
  const from = Number(query.get("from")) || (active ? active.version : versions[versions.length - 1].version);
  const to = Number(query.get("to")) || versions[0].version, step = query.get("step");
  const base = `${clusterPath(c)}/plan?from=${from}&to=${to}`, stepped = base + (step ? `&max_step=${encodeURIComponent(step)}` : "");
  /* the summary alone first: a server computes --plan-concurrency plans at once (2 by default) */
  const [plan, ctx] = await Promise.all([get(stepped + "&arcs=false&nodes=false"), planContext(c)]);
  const whole = Promise.all([fetchPlan(stepped), get(base + "&format=picture")]); /* while the verdict is drawn */
  whole.catch(() => {}); /* handled where it is awaited */
  const author = (versions.find((v) => v.version === to) || {}).author || null, act = active ? active.version : null;
  const open = act !== null && to > act && from === act && !(ctx.fleet.previous ?? null) &&
    !(ctx.rollout && ["running", "paused", "reverting"].includes(ctx.rollout.state));
  const me = open ? await whoAmI(c, plan, author) /* else the verdict offers at most a finish, which the server judges */
    : { may: !!token(), name: null, why: token() ? "" : "No token kept: paste one above to write." };
  const said = flash || {};
  flash = null;
  const judge = (x) => verdictPart(c, plan, rkVerdict({ ...x, plan, author, active: act, me }), x.fleet, said);
  const box = h("div", { id: "verdict-box" }, judge(ctx));
  const waiting = (what) => h("p", { class: "note" }, what);
  const slots = { checks: h("div", { id: "checks" }, waiting("checking the plan's invariants…")), modulo: h("div", {}),
    shares: h("div", { id: "shares" }, waiting("loading the shares…")), rings: h("div", {}, waiting("loading the rings…")) };
  const field = (id) => document.getElementById(id).value;
  const go = () => { location.hash = `#/c/${encodeURIComponent(c)}/plan?from=${field("from")}&to=${field("to")}${field("step") ? "&step=" + field("step") : ""}`; };
  show(`Plan ${c}: v${from} → v${to}`, box, slots.checks,
    h("p", { class: "note" }, "digest ", h("code", { id: "digest" }, plan.digest), " · balance before ",
      num("plan.balance.before.max", plan.balance.before.max, "ratio"), " to ", num("plan.balance.before.min", plan.balance.before.min, "ratio"),
      ", after ", num("plan.balance.after.min", plan.balance.after.min, "ratio"), " at least"),
    planForm(versions, from, to, step, go),
    plan.warnings.length ? [h("h2", {}, "Warnings"), h("ul", { id: "warnings" }, plan.warnings.map((w) => h("li", {}, w)))] : "",
    h("h2", {}, "Where the keys go"), plan.transfers.length ? [transfersPart(plan), rkFlows.picture(plan.transfers, plan.moved_fraction)]
      : h("p", {}, "nothing moves"), slots.modulo,
    h("h2", {}, "Shares, most changed first"), slots.shares, h("h2", {}, "Rings"), slots.rings,
    plan.steps ? [h("h2", {}, "Steps"), table(["step", "share of the space", "arcs"], plan.steps, (s, i) => h("tr", {},
      h("td", { class: "n" }, num(`plan.steps.${i}.step`, s.step)), h("td", { class: "n" }, num(`plan.steps.${i}.fraction`, s.fraction, "pct")),
      h("td", { class: "n" }, num(`plan.steps.${i}.arcs.length`, s.arcs.length))))] : "");
  /* The verdict stays live: approvals, the policy, the fleet, a rollout. Another active version or
   * window is another situation (and another dry run): the view is drawn again. A reason being
   * typed is never wiped. */
  const mine = shown;
  const refresh = async () => {
    const x = await planContext(c);
    if (mine !== shown) return;
    if ((x.fleet.active ?? null) !== act || (x.fleet.previous ?? null) !== (ctx.fleet.previous ?? null))
      return void window.dispatchEvent(new HashChangeEvent("hashchange"));
    const reason = document.getElementById("force-reason");
    if (!(reason && (reason.value || document.activeElement === reason))) box.replaceChildren(judge(x));
  };
  const details = whole.then(([full, pic]) => mine === shown && planDetails(c, full, pic, base, slots));
  return { rest: Promise.all([details, rkPanels.live(c, [refresh], false)]) };
}

/* ---- routing and the token ---- */

/* Each view says when it is shown (data-ready, for the tests) and how long it took from the
 * route to the first frame drawn after it, fetches and drawing included: its first screen
 * (data-render-ms: a plan's verdict) and the whole of it (data-full-ms; docs/PERFORMANCE.md). */
async function route() {
  const t0 = performance.now();
  rkPanels.stop(); /* the view before may have watched another cluster */
  shown++;
  const [path, q] = location.hash.replace(/^#/, "").split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const failed = (e) => show("Error", h("p", { class: "message error", id: "error" }, e.message));
  let rest; /* what a view fills in after it is first drawn */
  try {
    if (parts[0] === "c" && parts.length === 2) ({ rest } = await clusterView(parts[1]));
    else if (parts[0] === "c" && parts[2] === "plan") ({ rest } = await planView(parts[1], new URLSearchParams(q || "")));
    else await clustersView(new URLSearchParams(q || ""));
  } catch (e) {
    failed(e);
  }
  await new Promise((resolve) => requestAnimationFrame(resolve));
  view.setAttribute("data-render-ms", (performance.now() - t0).toFixed(0));
  await Promise.resolve(rest).catch(failed);
  await new Promise((resolve) => requestAnimationFrame(resolve));
  view.setAttribute("data-full-ms", (performance.now() - t0).toFixed(0));
  view.setAttribute("data-ready", location.hash || "#/");
}

function tokenState() {
  document.getElementById("token-state").textContent = token() ? "token kept for this tab" : "no token";
}

/* The writes a view offers depend on the token: the view is drawn again with the new one. */
function tokenChanged() {
  tokenState();
  window.dispatchEvent(new HashChangeEvent("hashchange"));
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const field = document.getElementById("token");
  sessionStorage.setItem("rk-token", field.value.trim());
  field.value = "";
  tokenChanged();
});
document.getElementById("token-forget").addEventListener("click", () => {
  sessionStorage.removeItem("rk-token");
  tokenChanged();
});
window.addEventListener("hashchange", route);
tokenState();
route();
