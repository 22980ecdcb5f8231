"""The suite over real HTTP on 127.0.0.1: one stdlib threading server per product."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .suite import PRODUCTS, ProductUrls, Suite


def _handler_for(suite: Suite, product: str) -> type[BaseHTTPRequestHandler]:
    class ProductHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in two writes; don't wait on delayed ACKs

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            base = getattr(suite.urls, product)
            status, headers, data = suite.handle(
                self.command, base + self.path, None, dict(self.headers), body
            )
            try:
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                self.close_connection = True  # the caller gave up waiting (a slow product)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args) -> None:
            pass  # requests carry tokens; the sandbox keeps no access log

    return ProductHandler


class SandboxServers:
    """Serves every product of a suite on its own port (0: any free one) and points the suite's URLs at
    them."""

    def __init__(self, suite: Suite, host: str = "127.0.0.1", ports: dict[str, int] | None = None) -> None:
        self.suite = suite
        self.host = host
        self.ports = {p: (ports or {}).get(p, 0) for p in PRODUCTS}
        self._servers: list[ThreadingHTTPServer] = []
        self._threads: list[threading.Thread] = []

    def start(self) -> ProductUrls:
        """Bind and serve every product; returns the suite's URLs, now the servers' addresses."""
        for product in PRODUCTS:
            server = ThreadingHTTPServer((self.host, self.ports[product]), _handler_for(self.suite, product))
            server.daemon_threads = True
            self._servers.append(server)
            setattr(self.suite.urls, product, f"http://{self.host}:{server.server_address[1]}")
            # A short poll interval lets `stop` return at once rather than half a second per product.
            thread = threading.Thread(
                target=server.serve_forever, args=(0.05,), name=f"sandbox-{product}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self.suite.urls

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._servers.clear()
        self._threads.clear()

    def __enter__(self) -> SandboxServers:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
