"""docs_example.py — runs the example of a language's section in docs/CLIENT.md exactly as the page
writes it, against a ringkeeperd of its own (RINGKEEPERD) holding the cluster the example names.

usage: docs_example.py CLIENT_MD LANGUAGE COMMAND...  (the example's file is appended to COMMAND)
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rkserver import Server, topology  # noqa: E402

FENCE = {"python": ("python", ".py"), "go": ("go", ".go")}


def example(page, language):
    """The first fenced block of `language` under the heading '## <Language>'."""
    fence, _ = FENCE[language]
    section = re.search(r"^## %s\b(.*?)(?=^## |\Z)" % language.capitalize(), page, re.S | re.M)
    block = section and re.search(r"^```%s\n(.*?)^```" % fence, section.group(1), re.S | re.M)
    if not block:
        raise SystemExit("docs_example.py: no ```%s block under '## %s'" % (fence, language.capitalize()))
    return block.group(1)


def main():
    page, language, command = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3:]
    with tempfile.TemporaryDirectory(prefix="rk-example-") as tmp:
        path = os.path.join(tmp, "example" + FENCE[language][1])
        with open(path, "w") as f:
            f.write(example(page, language))
        server = Server(os.environ["RINGKEEPERD"], tmp)
        try:
            env = dict(os.environ, RINGKEEPER_SERVER=server.url)
            run = lambda: subprocess.run(command + [path], env=env, cwd=tmp, capture_output=True, text=True,
                                         timeout=300)
            missing = run()  # a newcomer's first run: the cluster not yet published, no cache file
            server.publish("sessions", topology(3, vnode_factor=160))
            out = run()
            _, clients = server.call("GET", "/v1/clusters/sessions/clients")
        finally:
            server.stop()
    said = missing.stdout + missing.stderr
    print(said, end="")
    if missing.returncode == 0 or "no ring" not in said or "Traceback" in said or "panic" in said:
        raise SystemExit("docs_example.py: without the cluster the %s example must exit with its 'no ring' "
                         "line, no traceback (exit %d)" % (language, missing.returncode))
    print(out.stdout + out.stderr, end="")
    if out.returncode != 0 or "user:42 ->" not in out.stdout:
        raise SystemExit("docs_example.py: the %s example failed (exit %d)" % (language, out.returncode))
    # a one-shot program says it is no member of the fleet: a rollout's hold never waits for it
    if clients["summary"]["total"] != 0:
        raise SystemExit("docs_example.py: the %s example was counted in the fleet: %s" % (language, clients))
    print("ok: docs/CLIENT.md's %s example" % language)


if __name__ == "__main__":
    main()
