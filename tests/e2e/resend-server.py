# The program Resend is tried on: /echo answers with what it received (method, path, one header, the body), /call
# makes an outbound call to UPSTREAM (a server the test runs) and answers with what that said. Prints "port N".
import json, os, sys, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path.startswith("/call"):
            req = urllib.request.Request(os.environ["UPSTREAM"] + "/items?from=program", headers={"x-from": "program"})
            with urllib.request.urlopen(req, timeout=10) as res:
                out = res.read()
        else:
            out = json.dumps(
                {"method": self.command, "path": self.path, "x_edit": self.headers.get("x-edit"), "body": body.decode("utf-8", "replace")}
            ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_POST = do_PUT = handle_any

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print("port", server.server_address[1], flush=True)
server.serve_forever()
