"""A scripted OpenAI-compatible chat server on 127.0.0.1 (the normals backend's and the
paraphrase attack's tests): a real HTTP server, the openai client talking to it."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    """A scripted /v1/chat/completions server on 127.0.0.1. The behaviour for a request is
    chosen by a ``[tag]`` in the user message; ``hits[tag]`` counts requests."""

    def __init__(self) -> None:
        self.hits: dict[str, int] = {}
        self.n_seen: dict[str, list[int]] = {}
        self.auth: set[str] = set()
        self.bodies: list[dict] = []  # every request's JSON body, in arrival order
        self.lock = threading.Lock()
        self.stop = threading.Event()  # set on close: endless replies end
        self.sent: dict[str, int] = {}  # bytes each hostile tag sent before the client left
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep stderr quiet
                pass

            def do_POST(self):
                try:
                    fake.handle(self)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def send(h, status: int, body: bytes, ctype: str = "application/json", headers=None):
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    @staticmethod
    def completion(n: int, tag: str, empty: bool = False, text: str | None = None) -> bytes:
        choices = [{"index": i, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "" if empty else
                                text or f"  normal answer {i} for {tag}  "}}
                   for i in range(n)]
        return json.dumps({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                           "choices": choices,
                           "usage": {"prompt_tokens": 10, "completion_tokens": 2 * n,
                                     "total_tokens": 10 + 2 * n}}).encode()

    def handle(self, h) -> None:
        body = json.loads(h.rfile.read(int(h.headers.get("Content-Length", 0))))
        auth = h.headers.get("Authorization", "")
        user = body["messages"][-1]["content"]
        tag = user[user.index("[") + 1:user.index("]")]
        n = int(body.get("n", 1))
        with self.lock:
            self.hits[tag] = self.hits.get(tag, 0) + 1
            self.n_seen.setdefault(tag, []).append(n)
            self.auth.add(auth)
            self.bodies.append(body)
            hit = self.hits[tag]
        if h.path != "/v1/chat/completions":
            return self.send(h, 404, b'{"error": {"message": "not found"}}')
        if tag == "429" and hit == 1:
            return self.send(h, 429, b'{"error": {"message": "Rate limit reached"}}',
                             headers={"Retry-After": "0"})
        if tag == "timeout":
            time.sleep(1.5)
            return self.send(h, 200, self.completion(n, tag))
        if tag in HOSTILE:
            return HOSTILE[tag](self, h, n, tag)
        if tag == "empty":
            return self.send(h, 200, b'{"choices": []}')
        if tag == "nonjson":
            return self.send(h, 200, b"this is not JSON {")
        if tag == "html":
            return self.send(h, 200, b"<html>gateway</html>", "text/html")
        if tag.startswith("ask-"):  # a reworded question
            return self.send(h, 200, self.completion(n, tag, text=f"Which book is by {tag}?"))
        if tag == "blank":
            return self.send(h, 200, self.completion(n, tag, empty=True))
        if tag == "one":  # a server that ignores n
            return self.send(h, 200, self.completion(1, f"{tag}-{hit}"))
        if tag == "no-n" and n > 1:
            return self.send(h, 400, b'{"error": {"message": "n must be 1"}}')
        if tag == "echo401":
            msg = {"error": {"message": f"Incorrect API key provided: {auth[7:]}"}}
            return self.send(h, 401, json.dumps(msg).encode())
        if tag == "echo500":
            msg = {"error": {"message": f"upstream failed for {auth}"}}
            return self.send(h, 500, json.dumps(msg).encode())
        return self.send(h, 200, self.completion(n, tag))



# --- hostile servers: a reply that never ends, or floods ----------------------------------------

PACE = 0.05  # seconds between the trickled bytes (the client's deadline is what ends them)
HUGE = 100 * 2**20  # a 100 MB completion


def _drip(fake: FakeOpenAI, h, tag: str, piece) -> None:
    """Write ``piece()`` every PACE seconds until the client hangs up or the server closes."""
    while not fake.stop.wait(PACE):
        data = piece()
        h.wfile.write(data)
        h.wfile.flush()
        with fake.lock:
            fake.sent[tag] = fake.sent.get(tag, 0) + len(data)


def _trickle(fake, h, n, tag):
    """A 200 that promises a megabyte and sends it one byte at a time."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(2**20))
    h.end_headers()
    _drip(fake, h, tag, lambda: b" ")


def _chunked(fake, h, n, tag):
    """An endless chunked reply, one byte per chunk."""
    h.protocol_version = "HTTP/1.1"
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    _drip(fake, h, tag, lambda: b"1\r\n \r\n")


def _slow_headers(fake, h, n, tag):
    """Headers that never end: one byte of a header line at a time."""
    h.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    _drip(fake, h, tag, lambda: b"a")


def _huge_parts(n: int, tag: str, content_bytes: int):
    head, tail = FakeOpenAI.completion(n, tag, text="\x00").split(b"\\u0000")
    block = b"a" * 2**20
    yield head
    for _ in range(content_bytes // len(block)):
        yield block
    yield b"?" + tail


def _huge(fake, h, n, tag):
    """A well-formed completion whose answer is 100 MB of text (ending in a question mark)."""
    parts = list(_huge_parts(n, tag, 0))
    size = sum(map(len, parts)) + HUGE
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(size))
    h.end_headers()
    for part in _huge_parts(n, tag, HUGE):
        h.wfile.write(part)
        with fake.lock:
            fake.sent[tag] = fake.sent.get(tag, 0) + len(part)


def _gzip_bomb(fake, h, n, tag):
    """The same 100 MB completion, gzip-compressed to about 100 KB."""
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = b"".join(z.compress(p) for p in _huge_parts(n, tag, HUGE)) + z.flush()
    fake.send(h, 200, body, headers={"Content-Encoding": "gzip"})


def _long_question(fake, h, n, tag):
    """A well-formed reply whose 'question' is 200,000 characters on one line."""
    fake.send(h, 200, fake.completion(n, tag, text="Which " + "very " * 40_000 + "book?"))


HOSTILE = {"trickle": _trickle, "chunked": _chunked, "slow-headers": _slow_headers,
           "huge": _huge, "gzip-bomb": _gzip_bomb, "long-question": _long_question}
