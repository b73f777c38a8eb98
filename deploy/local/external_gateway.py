"""A stand-alone search gateway that is not Mnemo: someone else's corpus, for the demo and the tests.

    python deploy/local/external_gateway.py [--port 0] [--host 127.0.0.1]

Prints `listening on http://HOST:PORT` once it accepts connections, then serves (Python's standard
library only, so it runs without the workspace):

- `POST /corpora/{corpus}/search` with `{"collection", "goal"}`: `{"chunks": [{id, text, tags}]}`,
  the corpus's chunks sharing a word of four letters or more with the goal's text (`utterance`, `message`, `query` or `topic`),
  all of them when none match. `product-disclosure` (the registry seed's worked example) is built in.
- `PUT /control/{corpus}` with `{"behaviour": "ok" | "empty" | "error" | "no-chunks" | "hang"}`:
  how that corpus answers from now on (500, a body without `chunks`, or no answer for 60 s).
- `GET /requests`: every search request received, in order (`{"corpus", "body", "authorization"}`);
  `DELETE /requests` forgets them.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CHUNKS: dict[str, list[dict[str, Any]]] = {
    "product-disclosure": [
        {
            "id": "pd-overdraft-1",
            "text": "Overdraft coverage is optional. If you opt in, we may pay an item that would "
            "overdraw your account and charge the overdraft fee shown in the fee schedule.",
            "tags": ["overdraft", "disclosure"],
        },
        {
            "id": "pd-overdraft-2",
            "text": "You can revoke overdraft coverage at any time in the app or at a branch; "
            "items presented after revocation are declined without a fee.",
            "tags": ["overdraft", "opt-out"],
        },
        {
            "id": "pd-savings-1",
            "text": "Savings accounts earn a variable rate that may change after the account is "
            "opened.",
            "tags": ["savings"],
        },
    ],
}

_lock = threading.Lock()
_behaviour: dict[str, str] = {}
_requests: list[dict[str, Any]] = []
_WORD = re.compile(r"[a-z0-9]+")
BEHAVIOURS = ("ok", "empty", "error", "no-chunks", "hang")


def goal_text(goal: object) -> str:
    if isinstance(goal, dict):
        for name in ("utterance", "message", "query", "topic"):
            value = goal.get(name)
            if isinstance(value, str) and value.strip():
                return value
    return json.dumps(goal, sort_keys=True)


def search(corpus: str, goal: object) -> list[dict[str, Any]]:
    chunks = CHUNKS.get(corpus, [])
    words = {w for w in _WORD.findall(goal_text(goal).lower()) if len(w) > 3}
    hits = [c for c in chunks if words & set(_WORD.findall(c["text"].lower()))]
    return hits or list(chunks)


class Handler(BaseHTTPRequestHandler):
    server_version = "external-gateway/1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> object:
        length = int(self.headers.get("Content-Length") or 0)
        if length > 1_000_000:
            return None
        try:
            return json.loads(self.rfile.read(length) or b"null")
        except ValueError:
            return None

    def do_GET(self) -> None:
        if self.path == "/requests":
            with _lock:
                self._send(200, {"requests": list(_requests)})
        elif self.path == "/healthz":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": "not found"})

    def do_DELETE(self) -> None:
        if self.path == "/requests":
            with _lock:
                _requests.clear()
            self._send(200, {"requests": []})
        else:
            self._send(404, {"error": "not found"})

    def do_PUT(self) -> None:
        match = re.fullmatch(r"/control/([^/]+)", self.path)
        body = self._body()
        behaviour = body.get("behaviour") if isinstance(body, dict) else None
        if match is None or behaviour not in BEHAVIOURS:
            self._send(400, {"error": f"PUT /control/CORPUS {{'behaviour': one of {BEHAVIOURS}}}"})
            return
        with _lock:
            _behaviour[match.group(1)] = str(behaviour)
        self._send(200, {"corpus": match.group(1), "behaviour": behaviour})

    def do_POST(self) -> None:
        match = re.fullmatch(r"/corpora/([^/]+)/search", self.path)
        if match is None:
            self._send(404, {"error": "not found"})
            return
        corpus = match.group(1)
        body = self._body()
        with _lock:
            _requests.append(
                {"corpus": corpus, "body": body, "authorization": self.headers.get("Authorization")}
            )
            behaviour = _behaviour.get(corpus, "ok")
        if not isinstance(body, dict) or "goal" not in body:
            self._send(400, {"error": "send {collection, goal}"})
        elif behaviour == "error":
            self._send(500, {"error": "the gateway failed"})
        elif behaviour == "no-chunks":
            self._send(200, {"results": []})
        elif behaviour == "hang":
            time.sleep(60)
            self._send(200, {"chunks": []})
        elif behaviour == "empty":
            self._send(200, {"chunks": []})
        else:
            self._send(200, {"chunks": search(corpus, body["goal"])})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="a stand-alone external search gateway")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    server.daemon_threads = True
    host, port = str(server.server_address[0]), int(server.server_address[1])
    print(f"listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
