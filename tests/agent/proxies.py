"""proxies.py — the real proxies of test_agent.py: nginx, HAProxy and nutcracker (over real
memcached) with their files, and the backends they route to. Every process started here is
stopped by stop_all(); every wait is bounded."""
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "balancers"))
sys.path.insert(0, os.path.join(HERE, "..", "ketama"))
from haproxy_oracle import HAPROXY, HEAD  # noqa: E402
from nginx_oracle import NGINX  # noqa: E402
from nutcracker_oracle import wait_listening  # noqa: E402
import socket  # noqa: E402

TEMPS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def nginx_conf(tmp, name, lb, servers):
    """An nginx proxy on lb whose upstream rk hashes the request URI over servers [addr]."""
    temp = "".join("    %s_temp_path %s/%s-%s;\n" % (k, tmp, name, k) for k in TEMPS)
    return ("worker_processes 1;\npid %s/%s.pid;\nerror_log %s/%s.err;\nevents {}\nhttp {\n"
            "    access_log off;\n%s    upstream rk {\n        hash $request_uri consistent;\n%s"
            "    }\n    server { listen 127.0.0.1:%d; location / { proxy_pass http://rk; } }\n}\n"
            % (tmp, name, tmp, name, temp, "".join("        server %s;\n" % a for a in servers), lb))


def haproxy_conf(lb, servers):
    """A HAProxy proxy on lb whose backend rk hashes the URI over servers [(id, addr)]."""
    return (HEAD + "frontend lb\n    bind 127.0.0.1:%d\n    default_backend rk\n" % lb +
            "backend rk\n    balance uri\n    hash-type consistent\n" +
            "".join("    server s%s %s id %s\n" % (i, a, i) for i, a in servers))


def nutcracker_conf(listen, servers):
    """A nutcracker pool rk on listen over memcached servers [addr], ketama and fnv1a_64."""
    return ("rk:\n  listen: 127.0.0.1:%d\n  hash: fnv1a_64\n  distribution: ketama\n"
            "  auto_eject_hosts: false\n  timeout: 2000\n  servers:\n%s"
            % (listen, "".join("   - %s:1\n" % a for a in servers)))


# nutcracker cannot reload: the agent restarts it with this script (docs/AGENT.md), which fails
# while the test's marker file exists ("a failed reload").
RESTART = """#!/bin/sh
# restart.sh PIDFILE CONF STATS LOG MARKER
if [ -e "$5" ]; then echo "restart refused: the test's marker $5 exists" >&2; exit 1; fi
pid=$(cat "$1" 2>/dev/null)
if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
fi
exec nutcracker -d -c "$2" -s "$3" -a 127.0.0.1 -p "$1" -o "$4"
"""

# HAProxy's seamless reload through its master CLI, as a command (the agent's --reload), failing
# while the marker exists.
HA_RELOAD = """import os, socket, sys
if os.path.exists(sys.argv[2]):
    sys.exit("reload refused: the test's marker %s exists" % sys.argv[2])
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(b"reload\\n")
while s.recv(4096):
    pass
"""


def wait_port(port, what):
    """Waits (5 s at most) until something listens on the port: a daemon has no process here."""
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("%s did not listen on %d within 5 s" % (what, port))


class Fleet:
    """The processes of the test: started here, stopped by stop_all()."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.procs = []

    def popen(self, argv, log):
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                stderr=open(os.path.join(self.tmp, log), "a"))
        self.procs.append(proc)
        return proc

    def backends(self, ports):
        """One nginx whose servers each answer with their own address."""
        conf = os.path.join(self.tmp, "backends.conf")
        temp = "".join("    %s_temp_path %s/be-%s;\n" % (k, self.tmp, k) for k in TEMPS)
        with open(conf, "w") as f:
            f.write("pid %s/be.pid;\nerror_log %s/be.err;\nevents {}\nhttp {\n    access_log off;\n%s%s}\n" % (
                self.tmp, self.tmp, temp, "".join(
                    "    server { listen 127.0.0.1:%d; location / { return 200 \"127.0.0.1:%d\"; } }\n"
                    % (p, p) for p in ports)))
        proc = self.popen([NGINX, "-c", conf, "-g", "daemon off; master_process off;"], "be.log")
        for p in ports:
            wait_listening(p, proc, "backend nginx")

    def memcached(self, ports):
        for p in ports:
            proc = self.popen(["memcached", "-l", "127.0.0.1", "-p", str(p), "-U", "0", "-m", "16",
                               "-u", "root"], "memcached.log")
            wait_listening(p, proc, "memcached")

    def nginx(self, name, conf, lb):
        proc = self.popen([NGINX, "-c", conf, "-g", "daemon off;"], name + ".log")
        wait_listening(lb, proc, name)

    def haproxy(self, name, conf, lb):
        sock = os.path.join(self.tmp, name + ".sock")
        proc = self.popen([HAPROXY, "-W", "-S", sock, "-f", conf], name + ".log")
        wait_listening(lb, proc, name)
        return sock

    def nutcracker(self, name, conf, listen, stats):
        """Started by the restart script the agent uses; its command line for --reload."""
        script = os.path.join(self.tmp, "restart.sh")
        with open(script, "w") as f:
            f.write(RESTART)
        pidfile = os.path.join(self.tmp, name + ".pid")
        argv = ["sh", script, pidfile, conf, str(stats), os.path.join(self.tmp, name + ".log"),
                os.path.join(self.tmp, name + ".fail-reload")]
        subprocess.run(argv, timeout=30, check=True)
        for _ in range(100):
            if os.path.exists(pidfile):
                break
            time.sleep(0.05)
        wait_port(listen, name)
        return " ".join(argv)

    def daemons(self):
        """The PIDs of the nutcrackers of this test: by their command lines, which name its own
        temporary folder (a restart's pid file may be gone, or name the one before)."""
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open("/proc/%s/cmdline" % pid, "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if argv and argv[0].endswith(b"nutcracker") and any(self.tmp.encode() in a for a in argv):
                pids.append(int(pid))
        return pids

    def stop_all(self):
        for pid in self.daemons():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
