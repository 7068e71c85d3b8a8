"""engine/http_get.py (rigctl's own GET) against a kept-alive httpx.Client, the library it replaces,
and against the standard library's kept-alive http.client.HTTPConnection (what the verification's
POSTs use).

What a user beside vLLM pays for each, measured in one run against the same server on
127.0.0.1 serving a vLLM-sized /metrics (a real 0.32 CPU-build scrape, 54 KB):

  import   wall milliseconds of a fresh `python -c "import X"`, median of 7 (what every
           `rigctl status` pays before it asks anything)
  scrape   CPU microseconds of one GET of /metrics on a kept-alive connection, median of 5
           runs of 300 GETs (the dashboard does one a second)

Run:  python benchmarks/bench_http.py
Prints figures and ratios; asserts nothing.
"""

from __future__ import annotations

import http.server
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # benchmarks/: figures
from figures import figure

from rigctl.engine.http_get import HttpGet

BODY = (Path(__file__).resolve().parent.parent / "tests/fixtures/vllm-cpu/good-eager.metrics-after.prom").read_bytes()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/plain; version=0.0.4; charset=utf-8")
        self.send_header("content-length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, format: str, *args: object) -> None:
        return


def import_ms(module: str, runs: int = 7) -> float:
    def once() -> float:
        start = time.monotonic()
        subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
        return (time.monotonic() - start) * 1000

    return statistics.median(once() for _ in range(runs))


def scrape_us(get: object, runs: int = 5, count: int = 300) -> float:
    per_run = []
    for _ in range(runs):
        start = time.process_time()
        for _ in range(count):
            get()  # type: ignore[operator]
        per_run.append((time.process_time() - start) / count * 1e6)
    return statistics.median(per_run)


def main() -> None:
    import http.client

    import httpx

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    ours = HttpGet("127.0.0.1", port, 5.0, {})
    theirs = httpx.Client(timeout=5.0, trust_env=False)
    url = f"http://127.0.0.1:{port}/metrics"
    assert ours.get("/metrics") == (200, BODY) and theirs.get(url).content == BODY
    lean = scrape_us(lambda: ours.get("/metrics"))
    library = scrape_us(lambda: theirs.get(url).content)
    stdlib_connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5.0)

    def stdlib_get() -> bytes:
        stdlib_connection.request("GET", "/metrics")
        return stdlib_connection.getresponse().read()

    assert stdlib_get() == BODY
    stdlib = scrape_us(stdlib_get)
    bare = import_ms("sys")
    print(f"python {sys.version.split()[0]}, {len(BODY):,} byte /metrics, {time.strftime('%Y-%m-%d %H:%M')}")
    print(
        f"scrape  rigctl's HttpGet: {lean:.0f} us CPU a GET; httpx.Client kept alive: {library:.0f} us; "
        f"{library / lean:.1f}x; at one scrape a second the difference is {(library - lean) / 1e4:.3f}% of a core"
    )
    print(f"scrape  http.client.HTTPConnection kept alive: {stdlib:.0f} us; {stdlib / lean:.1f}x rigctl's")
    figure("http.get.rigctl", f"{lean:,.0f} us")
    figure("http.get.stdlib", f"{stdlib:,.0f} us")
    figure("http.get.httpx", f"{library:,.0f} us")
    figure("http.get.core_pct", f"{lean / 1e4:.2f}%")
    for module, key in (("rigctl.engine.http_get", "rigctl"), ("http.client", "stdlib"), ("httpx", "httpx")):
        # rigctl's module over `import rigctl` (the package and an editable install's finder,
        # which every rigctl command pays whatever it imports), the others over a bare interpreter
        took = import_ms(module) - (import_ms("rigctl") if module.startswith("rigctl.") else bare)
        print(f"import  {module}: {took:.0f} ms above a bare interpreter")
        figure(f"http.import.{key}", f"{took:.0f} ms")
    server.shutdown()


if __name__ == "__main__":
    main()
