#!/usr/bin/env python3
"""A local tile server for the remote-tiles tests: files under --root over HTTP on 127.0.0.1,
with byte ranges, ETag / Last-Modified validators and 304 answers, and switches a test flips:

  GET /_control?max_age=N&fail=N&no_ranges=0|1&etag_salt=S   set Cache-Control max-age, fail the
                                                             next N requests with 503, ignore
                                                             Range headers, change every ETag
  GET /_stats                                                {"requests", "not_modified", "ranges", "paths"}

Prints "PORT <n>" on its first line once it listens (pass --port 0 for any free port).
Standard library only.
"""
import argparse, email.utils, json, os, sys, threading, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

state = {"max_age": 3600, "fail": 0, "no_ranges": False, "etag_salt": "", "requests": 0, "not_modified": 0,
         "ranges": 0, "paths": []}
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_plain(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == "/_control":
            query = urllib.parse.parse_qs(url.query)
            with lock:
                if "max_age" in query: state["max_age"] = int(query["max_age"][0])
                if "fail" in query: state["fail"] = int(query["fail"][0])
                if "no_ranges" in query: state["no_ranges"] = query["no_ranges"][0] == "1"
                if "etag_salt" in query: state["etag_salt"] = query["etag_salt"][0]
            return self.send_plain(200, b"ok")
        if url.path == "/_stats":
            with lock:
                body = json.dumps({k: state[k] for k in ("requests", "not_modified", "ranges", "paths")}).encode()
            return self.send_plain(200, body, [("Content-Type", "application/json")])
        with lock:
            state["requests"] += 1
            state["paths"].append(url.path)
            failing = state["fail"] > 0
            if failing: state["fail"] -= 1
            max_age, no_ranges, salt = state["max_age"], state["no_ranges"], state["etag_salt"]
        if failing:
            return self.send_plain(503, b"try later")
        path = os.path.realpath(os.path.join(ROOT, urllib.parse.unquote(url.path).lstrip("/")))
        if not path.startswith(ROOT) or not os.path.isfile(path):
            return self.send_plain(404, b"no such tile", [("Cache-Control", f"max-age={max_age}")])
        info = os.stat(path)
        etag = f'"{info.st_size}-{info.st_mtime_ns}{salt}"'
        validators = [("ETag", etag), ("Last-Modified", email.utils.formatdate(info.st_mtime, usegmt=True)),
                      ("Cache-Control", f"max-age={max_age}")]
        if self.headers.get("If-None-Match") == etag:
            with lock: state["not_modified"] += 1
            self.send_response(304)
            for name, value in validators: self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(path, "rb") as f:
            data = f.read()
        range_header = self.headers.get("Range")
        if range_header and not no_ranges and range_header.startswith("bytes="):
            start_text, _, end_text = range_header[6:].partition("-")
            start = int(start_text)
            end = min(int(end_text) if end_text else len(data) - 1, len(data) - 1)
            if start >= len(data):
                return self.send_plain(416, b"", [("Content-Range", f"bytes */{len(data)}")])
            with lock: state["ranges"] += 1
            return self.send_plain(206, data[start:end + 1],
                                   validators + [("Content-Range", f"bytes {start}-{end}/{len(data)}")])
        self.send_plain(200, data, validators)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--port", type=int, default=0)
    arguments = parser.parse_args()
    ROOT = os.path.realpath(arguments.root)
    server = ThreadingHTTPServer(("127.0.0.1", arguments.port), Handler)
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()
