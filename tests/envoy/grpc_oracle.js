// grpc_oracle.js — the oracle of the grpc_ring_hash scheme (docs/ENVOY.md): the published
// @grpc/grpc-js-xds package's own ring_hash balancer, created through grpc-js's load balancer
// registry, given the endpoints as xDS gives them (locality endpoints with their weights), builds
// its ring and picks; nothing of the ring is written here. Its leaves get subchannels that are
// READY at once, so a pick is the ring's and never the network's.
// stdin: a JSON line per configuration: {"endpoints": [{"address": "ip:port" or "[ip]:port",
// "weight": w}], "min_ring_size", "max_ring_size", "ring_size_cap", "hashes": ["decimal", ...]}.
// stdout: a JSON line per configuration: {"picks": [address, ...], "ring_size": n}.
"use strict";
const grpc = require("@grpc/grpc-js");
const { ConnectivityState } = require("@grpc/grpc-js/build/src/connectivity-state");
const lb = require("@grpc/grpc-js/build/src/load-balancer");
const { PickResultType } = require("@grpc/grpc-js/build/src/picker");
require("@grpc/proto-loader"); // its index adds the well-known protos the balancer loads
require("@grpc/grpc-js-xds/build/src/load-balancer-ring-hash").setup();
require("@grpc/grpc-js-xds/build/src/load-balancer-priority"); // isLocalityEndpoint: weights

// A subchannel that is READY at once: the picks are the ring's, not the network's.
class ReadySubchannel {
  constructor(address) { this.address = address; this.listeners = []; }
  getConnectivityState() { return ConnectivityState.READY; }
  addConnectivityStateListener(l) { this.listeners.push(l); }
  removeConnectivityStateListener(l) { this.listeners = this.listeners.filter((x) => x !== l); }
  startConnecting() {}
  getAddress() { return this.address; }
  throttleKeepalive() {}
  ref() {}
  unref() {}
  getChannelzRef() { return { kind: "subchannel", id: 0, name: this.address }; }
  isHealthy() { return true; }
  addHealthStateWatcher() {}
  removeHealthStateWatcher() {}
  addDataWatcher() {}
  getRealSubchannel() { return this; }
  realSubchannelEquals(o) { return o === this; }
  getCallCredentials() { return grpc.credentials.createEmpty(); }
  getChannel() { return null; }
}

function balancer(cfg) {
  let picker = null, state = null;
  const helper = {
    createSubchannel: (addr) => new ReadySubchannel(grpc.experimental.subchannelAddressToString(addr)),
    updateState: (s, p) => { state = s; picker = p; },
    requestReresolution: () => {},
    addChannelzChild: () => {},
    removeChannelzChild: () => {},
  };
  const config = lb.parseLoadBalancingConfig({ ring_hash: { min_ring_size: cfg.min_ring_size, max_ring_size: cfg.max_ring_size } });
  const b = lb.createLoadBalancer(config, helper);
  const endpoints = cfg.endpoints.map((e) => {
    const i = e.address.lastIndexOf(":");
    return { addresses: [{ host: e.address.slice(0, i).replace(/^\[|\]$/g, ""), port: Number(e.address.slice(i + 1)) }],
             localityPath: ["region"], endpointWeight: e.weight };
  });
  b.updateAddressList({ ok: true, value: endpoints }, config, { "grpc.lb.ring_hash.ring_size_cap": cfg.ring_size_cap }, "");
  return { b, endpoints, config, get: () => ({ picker, state }) };
}

// `--bench HOSTS SIZE RUNS`: the median ms of grpc-js-xds's own constructRing over HOSTS equal
// endpoints (the addresses bench_ring gives) at SIZE entries (minimum, maximum and cap), for
// tests/bench/bench_grpc.sh; the first build is timed apart.
async function bench(hosts, size, runs) {
  const endpoints = [];
  for (let i = 0; i < hosts; i++)
    endpoints.push({ address: `10.${Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${(i % 250) + 1}:8000`, weight: 1 });
  const cfg = { endpoints, min_ring_size: size, max_ring_size: size, ring_size_cap: size, hashes: [] };
  const x = balancer(cfg);
  for (let i = 0; i < 1000 && x.b.ring.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
  const list = x.endpoints, config = x.config, ms = [];
  for (let run = 0; run < runs; run++) {
    const t0 = process.hrtime.bigint();
    x.b.constructRing(list, config, size);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const first = ms[0];
  ms.sort((a, b) => a - b);
  process.stdout.write(`grpc-js-xds constructRing, ${hosts} hosts, ${x.b.ring.length} entries: median ${ms[Math.floor(runs / 2)].toFixed(4)} ms, first ${first.toFixed(4)} ms\n`);
  x.b.destroy();
}

async function main() {
  if (process.argv[2] === "--bench") return bench(Number(process.argv[3]), Number(process.argv[4]), Number(process.argv[5]));
  const lines = require("fs").readFileSync(0, "utf8").split("\n").filter((l) => l.trim());
  for (const line of lines) {
    const cfg = JSON.parse(line);
    const x = balancer(cfg);
    for (let i = 0; i < 100 && x.b.ring.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
    for (const leaf of x.b.leafMap.values()) leaf.startConnecting(); // as a pick on an IDLE leaf does
    for (let i = 0; i < 100 && x.get().state !== ConnectivityState.READY; i++) await new Promise((r) => setTimeout(r, 5));
    const { picker, state } = x.get();
    if (state !== ConnectivityState.READY) throw new Error("the balancer is not READY: " + state);
    const picks = cfg.hashes.map((h) => {
      const r = picker.pick({ extraPickInfo: { hash: h }, metadata: new grpc.Metadata() });
      if (r.pickResultType !== PickResultType.COMPLETE) throw new Error("no pick for " + h);
      return r.subchannel.getAddress();
    });
    process.stdout.write(JSON.stringify({ picks, ring_size: x.b.ring.length }) + "\n");
    x.b.destroy();
  }
}
main().catch((e) => { console.error("grpc_oracle.js: " + e.stack); process.exit(1); });
