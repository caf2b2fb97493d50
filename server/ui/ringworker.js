/* ringworker.js — builds one sorted part of a ring (ring.js, rkRing.part) off the page's thread:
 * rkRing.buildAsync starts two, so both cores hash a big ring and the page stays responsive. */
"use strict";
importScripts("hash.js", "ring.js");

onmessage = (ev) => {
  const p = rkRing.part(ev.data);
  postMessage(p, [p.hi.buffer, p.lo.buffer, p.node.buffer]);
  close();
};
