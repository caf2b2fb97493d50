/* panels.js — a cluster's live panels: its rollout, its migration job, its fleet and its events.
 * Each is a section that fills itself from the API (hidden while there is nothing to show); rkLive
 * keeps a view's panels current with a long poll of GET .../changes (docs/API.md), which answers
 * when anything of the cluster changes or after WAIT_S seconds: never a polling loop. */
"use strict";

const rkPanels = (() => {
  const WAIT_S = 25; /* a quiet cluster costs one request per 25 s; a change shows at once */
  const REST_MS = 1000; /* at most one refresh a second, however busy the cluster */
  const FAILED_MS = 5000; /* after a failed watch (the server restarting): look again this late */
  const SHOWN = 20; /* events and stragglers listed */
  const rates = new Map(); /* cluster -> the migration counters seen last, for a rate */

  /* A panel: a section whose body fill() replaces with what make() returns (null: hidden). */
  function panel(id, title, make) {
    const body = h("div", {});
    const sec = h("section", { id, "aria-label": title, hidden: true }, h("h2", {}, title), body);
    sec.fill = async () => {
      const parts = await make();
      sec.hidden = parts === null;
      body.replaceChildren(...[parts || []].flat(Infinity));
    };
    return sec;
  }

  /* ---- the rollout (docs/MIGRATE.md, "Rollouts") ---- */

  const ROLLOUT_ACTS = { review: ["approve"], approved: ["start", "abort"], running: ["pause", "abort"], paused: ["resume", "abort"] };

  function rolloutBody(c, r) {
    const out = h("div", { id: "rollout-result", class: "message", role: "status" }, "");
    const base = `${clusterPath(c)}/rollouts/${r.id}`;
    const button = (a) => writeButton(`rollout-${a}`, `${a} rollout ${r.id}`,
      `${a[0].toUpperCase() + a.slice(1)} rollout ${r.id} of ${c}${a === "approve" ? ` by digest ${r.digest}` : ""}?`,
      "POST", `${base}/${a}`, a === "approve" ? { digest: r.digest } : undefined, out);
    const changes = (s) => (s.changes || []).slice(0, 3).map((x) => `${x.id} ${x.weight_before} → ${x.weight_after}`).join(", ") +
      ((s.changes || []).length > 3 ? `, +${s.changes.length - 3} more` : "");
    return [h("p", { id: "rollout-state", "data-state": r.state }, `rollout ${r.id}: ${r.state}`, r.step ? `, step ${r.step} of ${r.steps.length}` : "",
      r.phase ? ` (${r.phase})` : "", " · moves ", num("rollout.total_moved", r.total_moved, "pct"), " in all against ",
      num("rollout.one_shot_moved", r.one_shot_moved, "pct"), " at once · digest ", h("code", {}, r.digest),
      r.reason ? [h("br", {}), r.reason] : "", r.waiting ? [h("br", {}), h("span", { id: "rollout-waiting" }, `waiting: ${r.waiting}`)] : ""),
    r.load && r.load.profile ? h("p", { id: "rollout-load" }, "By the load profile: ", num("rollout.load.moving_bytes", r.load.moving_bytes, "bytes"),
      " of ", num("rollout.load.bytes", r.load.bytes, "bytes"), " move in all",
      r.load.profile.age_s !== undefined ? ` (profile measured ${rkFmt.age(r.load.profile.age_s)} before the review)` : "", ".") : "",
    table(["step", "state", "version", "moved", "balance after", ...(r.load ? ["bytes moved", "bytes over mean"] : []), "weights"], r.steps,
      (s, i) => h("tr", { "data-step-state": s.state },
        h("td", { class: "n" }, num(`rollout.steps.${i}.n`, s.n)), h("td", {}, s.state), h("td", { class: "n" }, s.version === null ? "-" : String(s.version)),
        h("td", { class: "n" }, num(`rollout.steps.${i}.moved_fraction`, s.moved_fraction, "pct")),
        h("td", { class: "n" }, num(`rollout.steps.${i}.balance_after`, s.balance_after, "ratio")),
        r.load && s.load ? [h("td", { class: "n" }, num(`rollout.steps.${i}.load.moving_bytes`, s.load.moving_bytes, "bytes")),
          h("td", { class: "n" }, num(`rollout.steps.${i}.load.bytes_over_mean_after`, s.load.bytes_over_mean_after, "ratio"))]
          : r.load ? [h("td", {}, "-"), h("td", {}, "-")] : "", h("td", {}, changes(s)))),
    h("p", {}, (ROLLOUT_ACTS[r.state] || []).map((a) => [button(a), " "]), ROLLOUT_ACTS[r.state] ? needsToken() : ""), out];
  }

  function rollout(c) {
    return panel("panel-rollout", "Rollout", async () => {
      const r = (await get(clusterPath(c) + "/rollouts")).rollouts[0];
      window.rkRollout = r; /* the document the panel shows, for a look and the tests */
      return r ? rolloutBody(c, r) : null;
    });
  }

  /* ---- the migration job (docs/MIGRATE.md) ---- */

  /* Keys copied a second since the counters seen last, or null on the first look at a job. */
  function rate(c, j) {
    const now = performance.now(), was = rates.get(c);
    /* keys moved: copied, or found present already (what the throttle counts as well) */
    const moved = j.counters.copied + j.counters.present;
    rates.set(c, { id: j.id, moved, bytes: j.counters.bytes, at: now });
    if (!was || was.id !== j.id || now - was.at < 1) return null;
    const s = (now - was.at) / 1000;
    return { keys: (moved - was.moved) / s, bytes: (j.counters.bytes - was.bytes) / s };
  }

  function migrationBody(c, j) {
    const out = h("div", { id: "migration-result", class: "message", role: "status" }, "");
    const k = j.counters, r = rate(c, j), path = clusterPath(c) + "/migration";
    const t = j.throttle, limit = (v, unit) => (v ? `${rkFmt.count(v)} ${unit}/s` : "unlimited");
    const acts = [];
    if (j.state === "copying" || j.state === "verifying")
      acts.push(writeButton("migration-pause", `pause job ${j.id}`, `Pause migration job ${j.id} of ${c} (v${j.from} → v${j.to})?`, "POST", path + "/pause", {}, out));
    if (j.state === "paused")
      acts.push(writeButton("migration-resume", `resume job ${j.id}`, `Resume migration job ${j.id} of ${c} (v${j.from} → v${j.to})?`, "POST", path + "/resume", {}, out));
    const field = h("input", { id: "throttle-keys", type: "number", min: "0", step: "1", size: "8", value: String(t.keys_per_s) });
    const throttle = h("form", { id: "throttle-form", onsubmit: async (ev) => {
      ev.preventDefault();
      const keys = Number(field.value);
      if (!confirm(`Throttle migration job ${j.id} of ${c} to ${keys ? keys + " keys/s" : "no limit"}?`)) return;
      const res = await call("PUT", path + "/throttle", { keys_per_s: keys });
      if (res.status >= 300) return void ((out.className = "message error"), (out.textContent = errorText(res)));
      window.dispatchEvent(new HashChangeEvent("hashchange"));
    } }, h("label", { for: "throttle-keys" }, "throttle, keys/s (0: none) "), field, " ",
    h("button", { type: "submit", id: "throttle", ...(token() ? {} : { disabled: "", title: NEEDS_TOKEN }) }, "set"));
    return [h("p", { id: "migration-state", "data-state": j.state }, `job ${j.id}: ${j.state} (${j.mode}), v${j.from} → v${j.to}, step ${j.step} of ${j.steps}`,
      j.worker ? ` · worker ${j.worker.id}` : " · no worker"),
    h("table", { id: "migration-counters" }, h("tbody", {},
      h("tr", {}, h("th", { scope: "row" }, "keys copied"), h("td", { class: "n" }, num("migration.counters.copied", k.copied, "count")),
        h("th", { scope: "row" }, "scanned"), h("td", { class: "n" }, num("migration.counters.scanned", k.scanned, "count"))),
      h("tr", {}, h("th", { scope: "row" }, "keys present"), h("td", { class: "n" }, num("migration.counters.present", k.present, "count")),
        h("th", { scope: "row" }, "skipped"), h("td", { class: "n" + (k.skipped ? " fail" : "") }, num("migration.counters.skipped", k.skipped, "count"))),
      h("tr", {}, h("th", { scope: "row" }, "bytes copied"), h("td", { class: "n" }, num("migration.counters.bytes", k.bytes, "count")),
        h("th", { scope: "row" }, "errors"), h("td", { class: "n" + (k.errors ? " fail" : "") }, num("migration.counters.errors", k.errors, "count"))),
      h("tr", {}, h("th", { scope: "row" }, "rate now"), h("td", { class: "n", id: "migration-rate" }, r ? `${rkFmt.count(Math.round(r.keys))} keys/s` : "—"),
        h("th", { scope: "row" }, "throttle"), h("td", {}, `${limit(t.keys_per_s, "keys")}, ${limit(t.bytes_per_s, "bytes")}`)))),
    j.errors && j.errors.length ? h("ul", { id: "migration-errors" }, j.errors.slice(0, 5).map((e) => h("li", {}, typeof e === "string" ? e : JSON.stringify(e)))) : "",
    h("p", {}, acts.map((b) => [b, " "]), needsToken()), throttle, out];
  }

  /* A cluster that never had a job answers GET .../migration with 404, which a browser logs as an
   * error at every refresh: the job is asked for only when one of the last JOB_EVENTS events is a
   * migration's (a job writes one at its start and at each pause, resume, throttle or end). */
  const JOB_EVENTS = 100;

  /* The cluster's migration job (its last one, whatever its state), or null when it never had one. */
  async function job(c) {
    const recent = (await get(`${clusterPath(c)}/events?limit=${JOB_EVENTS}`)).events;
    if (!recent.some((e) => e.kind.startsWith("migration_"))) return null;
    const r = await call("GET", clusterPath(c) + "/migration");
    if (r.status === 404 && r.body.error && r.body.error.code === "no_migration") return null;
    if (r.status !== 200) throw new Error(errorText(r));
    return r.body;
  }

  function migration(c) {
    return panel("panel-migration", "Migration", async () => {
      const j = await job(c);
      if (!j) return null;
      window.rkMigration = j;
      return migrationBody(c, j);
    });
  }

  /* ---- the fleet (the truthful report: held, not merely sent) ---- */

  function fleet(c) {
    return panel("panel-fleet", "Fleet", async () => {
      const doc = await get(clusterPath(c) + "/clients?limit=100"), s = doc.summary;
      if (s.total === 0) return h("p", { id: "fleet-summary" }, "No client seen in the last expiry (a client is counted by its RK-Client id).");
      const v = s.active, behind = doc.clients.filter((x) => x.held !== v || x.refused !== null);
      const proxies = doc.clients.filter((x) => x.proxy); /* ringkeeper agent's, by their User-Agent */
      const held = (x) => h("td", { class: "n" }, x.held === null ? "none" : `v${x.held}`);
      const refused = (x) => h("td", { class: "n" + (x.refused ? " fail" : "") }, x.refused === null ? "" : `v${x.refused}`);
      const head = (cols) => h("thead", {}, h("tr", {}, cols.map((x) => h("th", { scope: "col" }, x))));
      return [h("p", { id: "fleet-summary" }, convergedText(s), s.previous !== null ? ` · window open: clients also read v${s.previous}` : ""),
        behind.length ? h("table", { id: "fleet-behind" }, head(["client", "kind", "holds", "offered", "refuses", "why", "seen"]),
          h("tbody", {}, behind.slice(0, SHOWN).map((x) => h("tr", { "data-client": x.id }, h("td", {}, x.id), h("td", {}, x.proxy || "application"), held(x),
            h("td", { class: "n" }, x.offered === null ? "-" : `v${x.offered}`), refused(x),
            h("td", {}, x.reason || ""), h("td", {}, x.last_seen))))) : "",
        behind.length > SHOWN ? h("p", { class: "note" }, `${SHOWN} of ${behind.length} listed, stragglers first`) : "",
        proxies.length ? h("table", { id: "fleet-proxies" }, h("caption", {}, `Proxies (${proxies.length} agent${proxies.length > 1 ? "s" : ""} among the clients listed)`),
          head(["agent", "proxy", "holds", "refuses", "why"]),
          h("tbody", {}, proxies.slice(0, SHOWN).map((x) => h("tr", { "data-client": x.id, "data-proxy": x.proxy }, h("td", {}, x.id), h("td", {}, x.proxy), held(x), refused(x),
            h("td", {}, x.reason || ""))))) : ""];
    });
  }

  /* ---- the events (the cluster's audit) ---- */

  function events(c) {
    return panel("panel-events", "Events", async () => {
      const list = (await get(`${clusterPath(c)}/events?limit=${SHOWN}`)).events;
      if (!list.length) return null;
      return h("table", { id: "events" }, h("thead", {}, h("tr", {}, ["at", "what", "who", "version", "detail"].map((x) => h("th", { scope: "col" }, x)))),
        h("tbody", {}, list.map((e) => h("tr", { "data-event": e.event, "data-kind": e.kind }, h("td", {}, e.at), h("td", {}, e.kind), h("td", {}, e.author || ""),
          h("td", { class: "n" }, e.version === null ? "" : (e.from_version ? `v${e.from_version} → ` : "") + `v${e.version}`),
          h("td", {}, [e.detail || "", e.digest ? [" ", h("code", {}, e.digest)] : "", e.moved_fraction !== null && e.moved_fraction !== undefined ? ` moved ${rkFmt.pct(e.moved_fraction)}` : ""])))));
    });
  }

  /* ---- keeping them current ---- */

  let watching = null; /* the AbortController of the watch running, one per view */

  /* Runs `refresh` (async functions) now (unless `now` is false), then each time the cluster
   * changes, until the next view starts its own watch. view.dataset.liveRuns counts the runs (the
   * tests wait on it). */
  async function live(c, refresh, now = true) {
    if (watching) watching.abort();
    const me = (watching = new AbortController()), view = document.getElementById("view");
    let since = null, runs = 0;
    view.dataset.liveRuns = "0";
    const all = async () => {
      await Promise.all(refresh.map((f) => f()));
      view.dataset.liveRuns = String(++runs);
    };
    if (now) await all();
    (async () => {
      while (!me.signal.aborted) {
        let pause = FAILED_MS;
        try {
          const r = await fetch(`${clusterPath(c)}/changes?wait=${WAIT_S}` + (since === null ? "" : `&since=${since}`), { signal: me.signal });
          const doc = r.status === 200 ? await r.json() : null;
          const changed = doc && since !== null && doc.seq !== since;
          if (changed && !me.signal.aborted) await all();
          pause = !doc ? FAILED_MS : changed ? REST_MS : 0; /* the first look, or a wait that ran out */
          since = doc ? doc.seq : since;
        } catch (e) {
          if (me.signal.aborted) return;
        }
        if (pause) await new Promise((resolve) => setTimeout(resolve, pause));
      }
    })();
  }

  function stop() {
    if (watching) watching.abort();
    watching = null;
  }

  return { panel, rollout, migration, job, fleet, events, live, stop };
})();
