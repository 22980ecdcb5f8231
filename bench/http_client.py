"""What one suite call costs the client itself: its CPU to send a read and take in the answer.

A local server (a thread of this process) answers every GET with one eligibility answer of 100
and of 10,000 agents (about 8 KB and 790 KB); the client (`superdispatch.clients.http.Http`,
over its own pool) reads it whole and hands the bytes back, not decoded, so the figure is the
HTTP client's alone: building the request, urllib3 and http.client, the header parsing, the
body's read. Only the calling thread's CPU is counted, not the server's.

Run: .venv/bin/python bench/http_client.py [calls]      (default 2,000 at 100 agents; a tenth at 10,000)
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._results import last_line  # noqa: E402
from superdispatch.clients.http import Http  # noqa: E402

PATH = "/v1/boards/brd_1/cards/card_1/eligibility"
WARM_UP = 20


def answer(agents: int) -> bytes:
    return json.dumps(
        {
            "cardId": "card_1",
            "stageKey": "review",
            "agents": [
                {
                    "agentId": f"agt_{i:05d}",
                    "principalId": f"prn_{i:05d}",
                    "eligible": i % 3 > 0,
                    "reasons": [] if i % 3 else ["grant_denied"],
                }
                for i in range(agents)
            ],
        }
    ).encode()


def serve(body: bytes) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # One write for the headers and the body: written apart, loopback's delayed ACK
        # holds each answer back some 40 ms.
        wbufsize = 1 << 20

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def cpu_ms_a_call(agents: int, calls: int) -> float:
    body = answer(agents)
    server = serve(body)
    try:
        http = Http("superpipeline", f"http://127.0.0.1:{server.server_address[1]}")

        def call() -> bytes:
            return http.call("GET", PATH, lambda content: content, read=True)

        if call() != body:
            sys.exit("the answer came back changed")
        for _ in range(WARM_UP):
            call()
        started = time.thread_time()
        for _ in range(calls):
            call()
        return (time.thread_time() - started) * 1000 / calls
    finally:
        server.shutdown()
        server.server_close()


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    small = cpu_ms_a_call(100, calls)
    large = cpu_ms_a_call(10_000, max(calls // 10, 1))
    print(
        f"one eligibility read, the client's own CPU: {small:.3f} ms at 100 agents, {large:.3f} ms at 10,000"
    )
    last_line(f"http_call_cpu_ms_100={small:.3f} http_call_cpu_ms_10000={large:.3f}")


if __name__ == "__main__":
    main()
