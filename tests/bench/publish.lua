-- publish.lua — wrk script for tests/bench/bench_server.sh: every request POSTs the topology in the
-- file named by $RK_BENCH_BODY (a new staged version each time) and counts answers other than 201.
local f = assert(io.open(assert(os.getenv("RK_BENCH_BODY"), "RK_BENCH_BODY is not set"), "rb"))
wrk.method = "POST"
wrk.body = f:read("*a")
f:close()
wrk.headers["Content-Type"] = "application/json"
if os.getenv("RK_BENCH_TOKEN") then
    wrk.headers["Authorization"] = "Bearer " .. os.getenv("RK_BENCH_TOKEN")
end

local threads = {}

function setup(thread)
    table.insert(threads, thread)
end

function init(args)
    created, other = 0, 0
    local req = wrk.format()
    request = function() return req end
end

function response(status, headers, body)
    if status == 201 then created = created + 1 else other = other + 1 end
end

function done(summary, latency, requests)
    local c, o = 0, 0
    for _, t in ipairs(threads) do
        c = c + t:get("created")
        o = o + t:get("other")
    end
    io.write(string.format("publish answers: %d x 201, %d other\n", c, o))
end
