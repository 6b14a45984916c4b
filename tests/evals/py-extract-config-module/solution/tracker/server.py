import json
from http.server import BaseHTTPRequestHandler, HTTPServer

from .config import load_config
from .store import Store


def make_handler(store):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(store.all()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


def build_app(config_path):
    """Returns the ((host, port), handler class) pair the HTTP API serves with."""
    cfg = load_config(config_path)
    store = Store(cfg["data_dir"])
    return ("127.0.0.1", cfg["port"]), make_handler(store)


def serve(config_path):
    address, handler = build_app(config_path)
    HTTPServer(address, handler).serve_forever()
