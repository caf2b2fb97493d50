/* attention.js — what a cluster waits on, for the clusters list: a change staged, a migration window
 * open, a migration job running or failed, a rollout waiting or moving, clients refusing. Pure: from
 * documents the list fetches anyway or cheaply (the versions, the fleet summary, the latest rollout,
 * the job), so the tests can feed it any case. */
"use strict";

/* Each badge: {key, level: "warn" (a person should act) | "bad" (something went wrong) | "info"
 * (moving by itself), text}. `staged` the staged versions newer than the active one, newest first;
 * `fleet` GET .../clients' summary; `rollout` and `job` the latest of each, or undefined/null. */
function rkAttention({ staged, fleet, rollout, job }) {
  const out = [], add = (key, level, text) => out.push({ key, level, text });
  if (staged.length) add("staged", "warn", `change staged: v${staged[0].version}` + (staged.length > 1 ? ` (+${staged.length - 1} more)` : ""));
  if (fleet.previous !== null && fleet.previous !== undefined) add("window", "warn", `window open: v${fleet.previous} → v${fleet.active}`);
  if (job) {
    if (job.state === "failed") add("job", "bad", `job ${job.id} failed`);
    else if (job.state === "paused") add("job", "warn", `job ${job.id} paused`);
    else if (job.state === "copying" || job.state === "verifying") add("job", "info", `job ${job.id} ${job.state}`);
  }
  if (rollout) {
    const waits = { review: "waiting for approval", approved: "waiting to start", paused: "paused" }[rollout.state];
    if (rollout.state === "failed") add("rollout", "bad", `rollout ${rollout.id} failed`);
    else if (waits) add("rollout", "warn", `rollout ${rollout.id} ${waits}`);
    else if (rollout.state === "running" || rollout.state === "reverting") add("rollout", "info", `rollout ${rollout.id} ${rollout.state}`);
  }
  if (fleet.refusing) add("refusing", "bad", `${fleet.refusing} client${fleet.refusing > 1 ? "s" : ""} refusing v${fleet.active}`);
  return out;
}

if (typeof module !== "undefined") module.exports = { rkAttention };
