/* verdict.js — the first thing a plan's page says: may this go, and what will it cost? From the plan,
 * the cluster's policy and events, its fleet report and its rollout, each rule of the gate
 * (docs/API.md, "Cutover") as the server will judge an activation, and the writes the token in hand
 * may make next. Pure: the page fetches, this decides, so the tests can feed it any case. The server
 * stays the judge: a write the page offers can still be refused, and the refusal is shown as said. */
"use strict";

/* Each item: {key, state: "ok" | "warn" | "bad" | "info", title, text}. The state is said in words
 * and a mark as well as a colour. Each action: one of "approve", "activate", "force", "finish". */
function rkVerdict(s) {
  const { plan, policy, events, author, active, fleet, rollout, me } = s;
  const f = typeof rkFmt !== "undefined" ? rkFmt : require("./format.js").rkFmt;
  const items = [], add = (key, state, title, text) => items.push({ key, state, title, text });
  const balance = plan.balance.after.max;
  const overMoved = plan.moved_fraction > policy.max_moved_fraction;
  const overBalance = policy.max_balance_after !== null && balance > policy.max_balance_after;

  if (policy.max_moved_fraction >= 1) add("budget", "info", "budget", `${f.pct(plan.moved_fraction)} moves; the policy sets no limit`);
  else add("budget", overMoved ? "bad" : "ok", "budget", `${f.pct(plan.moved_fraction)} moves, ${overMoved ? "over" : "within"} the ${f.pct(policy.max_moved_fraction)} allowed` +
    (overMoved ? ": activation is refused unless forced with a reason" : ""));
  if (policy.max_balance_after === null) add("balance", "info", "balance after", `${f.ratio(balance)} the ideal at most; the policy sets no limit`);
  else add("balance", overBalance ? "bad" : "ok", "balance after", `${f.ratio(balance)} the ideal at most, ${overBalance ? "over" : "within"} the ${f.ratio(policy.max_balance_after)} allowed` +
    (overBalance ? ": activation is refused unless forced with a reason" : ""));

  const approvers = [...new Set(events.filter((e) => e.kind === "approve" && e.digest === plan.digest).map((e) => e.author))]
    .filter((a) => !(policy.distinct_approver && a === author));
  const missing = Math.max(0, policy.approvals - approvers.length);
  if (policy.approvals === 0) add("approvals", "info", "approvals", "none needed");
  else add("approvals", missing ? "warn" : "ok", "approvals", `${approvers.length} of ${policy.approvals} given` +
    (approvers.length ? ` (${approvers.join(", ")})` : "") + (missing ? `: ${missing} more needed, of this plan's digest` : ""));

  const mine = me && me.name !== null && me.name === author;
  if (!policy.distinct_approver) add("self", policy.approvals ? "warn" : "info", "self-approval", `allowed: ${author || "the author"}'s own approval counts`);
  else add("self", mine ? "warn" : "ok", "self-approval", mine ? `you published v${plan.to.version}: your approval will not count`
    : `${author || "the author"} may not approve v${plan.to.version}: approvals come from others`);

  const open = fleet && fleet.previous !== null && fleet.previous !== undefined;
  if (open) add("window", "bad", "migration window", `v${fleet.previous} → v${active} is open: finish it before activating another version`);
  else if (policy.migration_window) add("window", "ok", "migration window", "activation opens one: clients read from both owners while the data moves");
  else add("window", plan.moved_fraction > 0 ? "warn" : "info", "migration window",
    `none: the ${f.pct(plan.moved_fraction)} that moves is read cold from its new owners`);

  const bytes = loadItem(plan, policy, f);
  if (bytes) add("bytes", ...bytes);
  add("fleet", ...fleetItem(fleet, f));
  const driving = rollout && ["running", "paused", "reverting"].includes(rollout.state);
  if (driving) add("rollout", "bad", "rollout", `rollout ${rollout.id} is ${rollout.state}: activations by hand are refused until it ends`);
  const overBytes = !!bytes && bytes[0] === "bad";
  return { items, ...nextActions(s, { overMoved, overBalance, overBytes, missing, open, driving, mine: approvers.includes(me && me.name) }) };
}

/* The bytes item, by the cluster's load profile (docs/LOAD.md): what moves in bytes and reads, and
 * the policy's byte budget, which the gate judges only with a profile of the plan's hash. Without a
 * profile and without a budget there is no item: nothing changes. */
function loadItem(plan, policy, f) {
  const budget = policy.max_moved_bytes ?? null, refused = ": activation is refused unless forced with a reason";
  const l = plan.load;
  if (!l) {
    const why = plan.load_error ? `not weighed: ${plan.load_error}` : "no load profile is stored (ringkeeper measure --store)";
    if (budget !== null) return ["bad", "bytes", `${why}; the ${f.bytes(budget)} budget cannot be checked` + refused];
    return plan.load_error ? ["warn", "bytes", why] : null;
  }
  const over = budget !== null && l.moving_bytes > budget;
  const reads = l.requests > 0 ? `; ${f.pct(l.moving_requests / l.requests)} of the reads change owner` : "";
  const age = l.profile && l.profile.age_s !== undefined ? ` (profile measured ${f.age(l.profile.age_s)} ago)` : "";
  const text = `${f.bytes(l.moving_bytes)} of ${f.bytes(l.bytes)} move${reads}` +
    (budget === null ? "; the policy sets no byte budget" : `, ${over ? "over" : "within"} the ${f.bytes(budget)} allowed`) +
    age + (over ? refused : "");
  return [budget === null ? "info" : over ? "bad" : "ok", "bytes", text];
}

/* The fleet report's item: who holds the active version, who was offered it, who refuses it. */
function fleetItem(s, f) {
  if (!s || s.total === 0) return ["info", "fleet", "no clients seen lately"];
  const v = String(s.active), held = s.by_version[v] || 0, offered = Math.max(0, (s.offered_by_version[v] || 0) - held);
  const text = `${f.count(held)} of ${f.count(s.total)} hold v${s.active}` + (offered ? `, ${f.count(offered)} offered it` : "") +
    (s.refusing ? `, ${f.count(s.refusing)} refuse it` : "");
  return [s.refusing ? "bad" : s.converged ? "ok" : "warn", "fleet", text];
}

/* What the token may do next, and why not the rest: {actions, why}. */
function nextActions(s, g) {
  const { plan, active, me } = s, none = (why) => ({ actions: [], why });
  if (g.driving) return none("A rollout drives this cluster: use its controls.");
  if (g.open) return { actions: me.may ? ["finish"] : [], why: me.may ? "Finish the window once the data has moved." : me.why };
  if (active !== null && plan.to.version <= active)
    return none(plan.to.version === active ? `v${plan.to.version} is the active version: nothing to approve or activate.`
      : `v${plan.to.version} is older than the active v${active}: to roll back, revert to it (ringkeeper revert ${plan.to.version}) and activate the copy.`);
  if (active !== null && plan.from.version !== active)
    return none(`This plan starts at v${plan.from.version}, not at the active v${active}: the gate judges the plan from v${active}.`);
  if (!me.may) return none(me.why);
  const actions = [];
  const approve = me.approve && !g.mine;
  if (g.missing && approve) actions.push("approve");
  if (!g.missing) actions.push(g.overMoved || g.overBalance || g.overBytes ? "force" : "activate");
  const why = g.missing ? `Activation waits for ${g.missing} more approval${g.missing > 1 ? "s" : ""}` +
    (approve ? "." : g.mine ? "; yours is given." : `; ${me.approveWhy}`) : "";
  return { actions, why };
}

if (typeof module !== "undefined") module.exports = { rkVerdict };
