#!/usr/bin/env python3
"""raw_http.py — speak raw bytes to a loopback server, for the framing and abuse tests.

usage: raw_http.py PORT [--source ADDR] [--wait SECONDS] < REQUEST
Sends stdin as is (NUL bytes, bad framing and all), then reads until the server closes the
connection or SECONDS (default 2) pass without a byte. Prints what came back, then a last line
"--closed" (the server closed the connection) or "--open" (it was still open)."""
import argparse
import socket
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--source", default="127.0.0.1", help="a loopback address to connect from")
    ap.add_argument("--wait", type=float, default=2.0)
    args = ap.parse_args()
    request = sys.stdin.buffer.read()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(args.wait)
    s.bind((args.source, 0))
    s.connect(("127.0.0.1", args.port))
    answer, state = b"", "--open"
    try:
        s.sendall(request)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                state = "--closed"
                break
            answer += chunk
    except socket.timeout:
        pass
    except (ConnectionResetError, BrokenPipeError):
        state = "--closed"
    s.close()
    sys.stdout.buffer.write(answer + b"\n" + state.encode() + b"\n")


if __name__ == "__main__":
    main()
