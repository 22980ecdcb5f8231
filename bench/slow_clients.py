"""Slow clients against `manage.py serve`: N connections that each send part of a request and
hold it, then how long `/healthz` takes to answer on a connection of its own.

Two kinds of slow client, each at every N of `--connections`: a header line never finished
(slowloris), and a body that stops short of its Content-Length. The server is started here on
a fresh SQLite store (the embedded default), over loopback only, unless `--url` names one
already running. Each `/healthz` waits at most `--wait` seconds (its figure is then that
bound, marked `>`); every connection is closed before the next N.

    .venv/bin/python bench/slow_clients.py [--connections 8,12,16] [--wait 45] [--url http://…]
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from urllib.parse import urlsplit

from _common import PYTHON, ROOT, free_port, wait_until
from _results import last_line

ENV = {
    "SUPERPIPELINE_URL": "http://127.0.0.1:9",
    "ORG_PLANE_URL": "http://127.0.0.1:9",
    "ORG_PLANE_SERVICE_CREDENTIAL": "svc_0123456789abcdef0123:bench-only",
    "AGENTPOD_URL": "http://127.0.0.1:9",
    "TREATY_RELAY_DELIVERY_SECRET": "bench-only-relay-secret",
    "SUPERDISPATCH_OPERATOR_TOKEN_SHA256": "0" * 64,
}
KINDS = {
    "header": b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ",
    "body": (
        b"POST /v1/relay/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"type": '
    ),
}


def serve(data_dir: str) -> tuple[subprocess.Popen, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("SUPERDISPATCH_", "DATABASE_URL", "REDIS_URL"))
    }
    port = free_port()
    env.update(ENV, SUPERDISPATCH_DATA_DIR=data_dir, PORT=str(port))
    subprocess.run(
        [PYTHON, "manage.py", "migrate", "--no-input", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=300
    )
    server = subprocess.Popen(
        [PYTHON, "manage.py", "serve"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return server, f"http://127.0.0.1:{port}"


def healthz_s(host: str, port: int, wait: float) -> float | None:
    """Seconds to a whole `/healthz` answer, or None when none came within `wait`."""
    start = time.monotonic()
    try:
        with socket.create_connection((host, port), timeout=wait) as sock:
            sock.settimeout(max(0.1, wait - (time.monotonic() - start)))
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
    except OSError:  # the wait's bound reached (a timeout), or the server refusing
        return None
    return time.monotonic() - start if answer.startswith(b"HTTP/1.1 200") else None


def held(host: str, port: int, count: int, start: bytes) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection((host, port), timeout=5)
        sock.sendall(start)
        sockets.append(sock)
    return sockets


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", default="8,12,16")
    parser.add_argument("--wait", type=float, default=45.0)
    parser.add_argument("--url", default="")
    args = parser.parse_args()
    counts = [int(n) for n in args.connections.split(",")]
    server = None
    with tempfile.TemporaryDirectory(prefix="slow-clients-") as data_dir:
        url = args.url
        if not url:
            server, url = serve(data_dir)
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or 80
        try:
            wait_until(lambda: healthz_s(host, port, 2) is not None, 120, "the server answering")
            figures = {"idle": healthz_s(host, port, args.wait)}
            for kind, start in KINDS.items():
                for count in counts:
                    sockets = held(host, port, count, start)
                    time.sleep(0.5)  # the server has read what each sent
                    try:
                        figures[f"{kind}{count}"] = healthz_s(host, port, args.wait)
                    finally:
                        for sock in sockets:
                            sock.close()
        finally:
            if server:
                server.terminate()
                server.wait(30)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average {load}; /healthz's time with N slow clients held (at most {args.wait} s)")
    line = []
    for name, seconds in figures.items():
        shown = f">{args.wait * 1000:.0f}" if seconds is None else f"{seconds * 1000:.0f}"
        print(f"  {name:>10}: {shown} ms")
        line.append(f"healthz_ms_{name}={shown}")
    last_line(" ".join(line))


if __name__ == "__main__":
    sys.exit(main())
