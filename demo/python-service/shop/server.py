"""The demo inventory service: GET /quote looks stock up and prices it, on a thread per
request. Profiled by the roottrace SDK when ROOTTRACE_SERVER is set."""
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from shop.inventory import lookup_stock
from shop.pricing import compute_quote

VERSION = os.environ.get("DEMO_VERSION", "1.0")


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/quote":
            self.send_error(404)
            return
        stock = lookup_stock("sku-42")
        quote = compute_quote([3, 14, 15, 92, 65, stock])
        body = f"{quote}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    if os.environ.get("ROOTTRACE_SERVER"):
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "sdk",
                                        "python", "src"))
        import roottrace
        roottrace.start(server=os.environ["ROOTTRACE_SERVER"], key=os.environ["ROOTTRACE_KEY"],
                        service="inventory", version=VERSION)
    httpd = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    print(f"inventory {VERSION} listening on {httpd.server_address[1]}", flush=True)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    main()
