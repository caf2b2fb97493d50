/* dom.js — the console's building blocks, shared by its views and panels: elements built as text
 * (never markup from the server), calls to the API with the tab's token, numbers with their exact
 * value, bounded tables, node swatches, and a write asked first. */
"use strict";

const MAX_ROWS = 200; /* rows per table: a 100k-node ring must not become 100k DOM rows */

/* h("td", {class: "n"}, "text", child...): an element; attributes as given, children as text. */
function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "style") e.style.cssText = v; /* CSSOM: allowed by the server's CSP, which refuses style attributes */
    else e.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) e.append(c instanceof Node ? c : String(c));
  return e;
}

/* A number from the API: the figure for people (format.js: "pct", "ratio", "count" or "plain"),
 * and the exact value, its JSON path and its format for a copy and the checks. */
function num(path, value, kind = "plain") {
  return h("span", { "data-k": path, "data-v": String(value), "data-f": kind, title: String(value) }, rkFmt[kind](value));
}

function token() {
  return sessionStorage.getItem("rk-token") || "";
}

/* GET or POST path; resolves to {status, body} with the body parsed when it is JSON. */
async function call(method, path, body) {
  const headers = {};
  if (method !== "GET" && token()) headers.Authorization = "Bearer " + token();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let parsed = text;
  try { parsed = JSON.parse(text); } catch (e) { /* a text answer stays text */ }
  return { status: r.status, body: parsed };
}

async function get(path) {
  const r = await call("GET", path);
  if (r.status !== 200) throw new Error(errorText(r));
  return r.body;
}

/* The server's refusal as it said it. */
function errorText(r) {
  const e = r.body && r.body.error;
  return e ? `${r.status} ${e.code}: ${e.message}` : `${r.status}: ${String(r.body).slice(0, 300)}`;
}

function clusterPath(c) {
  return "/v1/clusters/" + encodeURIComponent(c);
}

/* A table of the first MAX_ROWS items, row(item, index) building each, and a note saying how many
 * were left out: a 100000-node plan must not become 100000 rows, nor build them to drop them. */
function table(head, items, row = (x) => x, note = "") {
  const shown = items.slice(0, MAX_ROWS).map(row);
  return [
    h("table", {}, h("thead", {}, h("tr", {}, head.map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", {}, shown)),
    items.length > shown.length ? h("p", { class: "note" }, `${shown.length} of ${items.length} rows shown${note}`) : "",
  ];
}

/* A node's colour swatch: the colour its arcs have in every picture, from its id. */
function swatch(id) {
  return h("span", { class: "swatch", style: `background:${id === null ? rkDraw.OTHERS : rkDraw.colour(id)}`, "aria-hidden": "true" });
}

/* The staged versions newer than the active one, newest first: a change waiting for review. Older
 * staged versions are history, not a change (a revert publishes a new one). */
function newerStaged(versions) {
  const active = versions.find((v) => v.state === "active");
  return versions.filter((v) => v.state === "staged" && v.version > (active ? active.version : 0));
}

function versionPath(c, v) {
  return `${clusterPath(c)}/versions/${v}`;
}

/* The "clients converged" cell from GET .../clients' summary (docs/API.md): how many hold the
 * active version, and of the others how many were offered it (not yet confirmed) and refuse it. */
function convergedText(s) {
  if (s.total === 0) return "none seen";
  if (s.converged) return `yes, ${s.total}`;
  const v = String(s.active), held = s.by_version[v] || 0;
  const offered = (s.offered_by_version[v] || 0) - held;
  return `no: ${held} of ${s.total} hold v${v}` + (offered > 0 ? `, ${offered} offered` : "") +
    (s.refusing ? `, ${s.refusing} refusing` : "");
}

/* What a write button without a token says beside it: the server would refuse the write (401). */
const NEEDS_TOKEN = "needs a token with the ops role: paste one above";

/* The note beside a panel's writes while no token is kept; nothing once one is. */
function needsToken() {
  return token() ? "" : h("span", { class: "note needs-token" }, NEEDS_TOKEN);
}

/* A write button: asks `question` first, then sends it; a refusal is shown in `out` as the server
 * worded it, a success draws the view again (its live panels and verdict with it). Without a token
 * it is shown disabled, so that it is not pressed only to fail. */
function writeButton(id, label, question, method, route, body, out) {
  return h("button", { id, ...(token() ? {} : { disabled: "", title: NEEDS_TOKEN }), onclick: async () => {
    if (!confirm(question)) return;
    const r = await call(method, route, body);
    if (r.status >= 300) return void ((out.className = "message error"), (out.textContent = errorText(r)));
    window.dispatchEvent(new HashChangeEvent("hashchange"));
  } }, label);
}
