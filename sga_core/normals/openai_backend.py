"""The OpenAI backend: the paper's GPT-4o-mini recipe, with any OpenAI-compatible server.

For each forget row the prompt template (``assets/prompts``) is rendered into chat messages and
K-1 answers are asked for: one request with ``n=K-1`` where the server honours ``n``; when a
reply brings fewer choices, more requests ask for the rest (a server that rejects ``n`` with
HTTP 400 is then asked one answer per request). Rows run concurrently (``max_concurrency``
threads). Rate limits (429), timeouts, connection errors and server errors (5xx, 408, 409) are
retried with exponential backoff and jitter, a bounded number of times; ``Retry-After`` is
honoured up to ``retry_max_delay``. A malformed reply (no choices, empty content, a body that
is not JSON) or an exhausted retry budget fails that row only; the other rows go on. An
authentication error (401/403) stops the rows not yet started, since they would fail alike.

``timeout`` is the whole request's deadline, not a pause between bytes: a server that sends a
byte a second, or an endless chunked reply, is cut off when it is spent (the deadline holds
for connecting, sending, the headers and the body alike). A request that timed out is tried
once more at most; when that times out too the server is taken for hung, and the rows not yet
started fail at once instead of waiting the same way. A reply over :data:`MAX_REPLY_BYTES`
(as received, and once decompressed) is refused as malformed, without reading the rest.

The API key comes from ``api_key`` or the environment (``OPENAI_API_KEY``). It is held in
memory only: never written, never logged, and scrubbed from every error message.
"""

from __future__ import annotations

import logging
import os
import random
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from sga_core.data import NormalAnswer, NormalTable
from sga_core.normals.registry import register_backend
from sga_core.normals.result import GenerationResult, Progress
from sga_core.normals.templates import Template, default_template, load_template, render
from sga_core.params import param

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "MalformedReply",
    "RetriesExhausted",
    "openai_normals",
    "scrub",
]

log = logging.getLogger(__name__)

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
#: the largest reply accepted, in bytes (K-1 answers of max_tokens each are far smaller)
MAX_REPLY_BYTES = 4 * 2**20
#: times a request that timed out is tried again (a hung server costs two deadlines, once)
TIMEOUT_RETRIES = 1
_RETRY_STATUS = {408, 409, 429}
_KEYLIKE = re.compile(r"\b(sk|key|api)[-_][A-Za-z0-9_\-*.]{6,}", re.IGNORECASE)
_BEARER = re.compile(r"(Bearer\s+)\S+", re.IGNORECASE)


class MalformedReply(RuntimeError):
    """A reply without usable choices (no choices, empty content, not a JSON body)."""


class RetriesExhausted(RuntimeError):
    """A request that kept failing with retryable errors until the retry budget ran out."""


class _Fatal(RuntimeError):
    """An error every other row would hit too (bad key, no permission)."""


def _row_error(exc: BaseException, secret: str | None) -> str:
    """The message recorded for a failed row (the key scrubbed)."""
    from sga_core.normals.templates import TemplateError

    if isinstance(exc, MalformedReply):
        return scrub(f"malformed reply: {exc}", secret)
    if isinstance(exc, (RetriesExhausted, _Fatal)):
        return scrub(str(exc), secret)
    if isinstance(exc, TemplateError):
        return scrub(f"template: {exc}", secret)
    return _describe(exc, secret)


def scrub(text: str, secret: str | None) -> str:
    """``text`` with the secret, pieces of it, bearer tokens and key-like strings masked."""
    out = str(text)
    if secret:
        out = out.replace(secret, "***")
        if len(secret) >= 12:  # servers echo masked keys such as "sk-proj-****...abcd"
            out = out.replace(secret[:8], "***").replace(secret[-6:], "***")
    out = _BEARER.sub(r"\1***", out)
    return _KEYLIKE.sub("***", out)


def _describe(exc: BaseException, secret: str | None) -> str:
    status = getattr(exc, "status_code", None)
    message = str(exc) or type(exc).__name__
    head = type(exc).__name__ + (f" (HTTP {status})" if status else "")
    return scrub(f"{head}: {message}"[:500], secret)


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRY_STATUS or exc.status_code >= 500
    return False


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


class _Runner:
    def __init__(self, client, model: str, template: Template, kind: str, need: int,
                 params: dict[str, Any], max_retries: int, base_delay: float,
                 max_delay: float, use_n: bool, secret: str | None, seed: int | None,
                 timeout: float = 60.0) -> None:
        self.client = client
        self.model = model
        self.template = template
        self.kind = kind
        self.need = need
        self.params = params
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.use_n = use_n
        self.secret = secret
        self.lock = threading.Lock()
        self.tokens = {"prompt": 0, "completion": 0, "total": 0}
        self.fatal: str | None = None
        self.rng = random.Random(seed)
        self.timeout = timeout

    def _sleep(self, attempt: int, exc: BaseException) -> None:
        delay = min(self.max_delay, self.base_delay * (2 ** attempt))
        with self.lock:
            delay *= 0.5 + self.rng.random()  # jitter: 0.5x .. 1.5x
        after = _retry_after(exc)
        if after is not None:
            delay = max(delay, min(after, self.max_delay))
        time.sleep(delay)

    def _count(self, usage: Any) -> None:
        if usage is None:
            return
        prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion = int(getattr(usage, "completion_tokens", 0) or 0)
        total = int(getattr(usage, "total_tokens", 0) or 0) or prompt + completion
        with self.lock:
            self.tokens["prompt"] += prompt
            self.tokens["completion"] += completion
            self.tokens["total"] += total

    def _request(self, messages: list[dict[str, str]], n: int) -> list[str]:
        """One request with retries; the non-empty contents of its choices."""
        import openai

        extra = {"n": n} if n > 1 else {}
        attempt = timeouts = 0
        while True:
            if self.fatal is not None:
                raise _Fatal(self.fatal)
            try:
                reply = self.client.chat.completions.create(
                    model=self.model, messages=messages, **extra, **self.params)
                break
            except (openai.AuthenticationError, openai.PermissionDeniedError) as exc:
                message = _describe(exc, self.secret)
                with self.lock:
                    self.fatal = self.fatal or message
                raise _Fatal(message) from None
            except openai.BadRequestError:
                if n > 1:  # perhaps the server rejects n > 1: ask one answer at a time
                    self.use_n = False
                raise
            except ValueError as exc:  # a 200 reply whose body is not JSON
                raise MalformedReply(f"the reply is not valid JSON ({exc})") from None
            except Exception as exc:
                timed_out = isinstance(exc, openai.APITimeoutError)
                timeouts += timed_out
                if timed_out and timeouts > TIMEOUT_RETRIES:  # a hung server: stop waiting
                    message = (f"gave up after {attempt + 1} attempts: "
                               f"{_describe(exc, self.secret)}; the server did not answer "
                               f"within {self.timeout:g} s, {timeouts} times: taken for hung")
                    with self.lock:
                        self.fatal = self.fatal or message
                    raise RetriesExhausted(message) from None
                if not _retryable(exc) or attempt >= self.max_retries:
                    if _retryable(exc):
                        raise RetriesExhausted(f"gave up after {attempt + 1} attempts: "
                                           f"{_describe(exc, self.secret)}") from None
                    if type(exc).__name__ == "ReplyTooLarge":
                        raise MalformedReply(str(exc)) from None
                    raise
                log.info("retrying after %s (attempt %d of %d)",
                         _describe(exc, self.secret), attempt + 1, self.max_retries + 1)
                self._sleep(attempt, exc)
                attempt += 1
        choices = getattr(reply, "choices", None)
        if not isinstance(choices, list):
            raise MalformedReply("the reply is not a chat completion (not a JSON object with "
                                 "'choices')")
        self._count(getattr(reply, "usage", None))
        if not choices:
            raise MalformedReply("the reply has no choices")
        texts = []
        for choice in choices:
            message = getattr(choice, "message", None)
            content = getattr(message, "content", None)
            if isinstance(content, str) and content.strip():
                texts.append(content.strip())
        if not texts:
            raise MalformedReply("the reply's choices have no content")
        return texts

    def row(self, row: dict[str, Any]) -> list[str]:
        """K-1 answers for one forget row (raises on failure)."""
        import openai

        messages = render(self.template, row, self.kind)
        texts: list[str] = []
        requests = 0
        budget = self.need + 2  # requests per row, so a server ignoring n ends too
        while len(texts) < self.need:
            if requests >= budget:
                raise MalformedReply(f"got only {len(texts)} of {self.need} answers in "
                                     f"{requests} requests")
            want = self.need - len(texts)
            n = want if self.use_n else 1
            requests += 1
            try:
                texts += self._request(messages, n)
            except openai.BadRequestError:
                if n > 1:
                    continue  # retry the same row asking one answer per request
                raise
        return texts[: self.need]


def _make_client(api_key: str, base_url: str | None, timeout: float):
    import openai

    return openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0,
                         http_client=_http_client(timeout, base_url=base_url))


# --- the whole-request deadline and the reply cap ---------------------------------------------

_DEADLINE = threading.local()  # .at: the monotonic time the current request must end by


def _remaining() -> float | None:
    at = getattr(_DEADLINE, "at", None)
    return None if at is None else at - time.monotonic()


def _bounded(timeout: float | None) -> float | None:
    """``timeout`` (one socket operation's) cut to what is left of the request's deadline."""
    left = _remaining()
    if left is None:
        return timeout
    if left <= 0:
        return 0.0
    return left if timeout is None else min(timeout, left)


class _DeadlineStream:
    """A network stream whose every read and write ends by the request's deadline."""

    def __init__(self, inner):
        self._inner = inner

    def _check(self, error):
        left = _remaining()
        if left is not None and left <= 0:
            raise error("the request's deadline passed (a server sending too slowly)")

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        import httpcore2

        self._check(httpcore2.ReadTimeout)
        return self._inner.read(max_bytes, _bounded(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        import httpcore2

        self._check(httpcore2.WriteTimeout)
        return self._inner.write(buffer, _bounded(timeout))

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                     _bounded(timeout)))

    def close(self) -> None:
        self._inner.close()

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _DeadlineBackend:
    """The network backend of the client's connection pool, its streams deadline-bound."""

    def __init__(self, inner):
        self._inner = inner

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        return _DeadlineStream(self._inner.connect_tcp(host, port, _bounded(timeout),
                                                       local_address, socket_options))

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _DeadlineStream(self._inner.connect_unix_socket(path, _bounded(timeout),
                                                               socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _env_proxy(base_url: str | None) -> str | None:
    """The proxy the environment names for the server (``HTTPS_PROXY``, ``NO_PROXY``...), as
    the openai client's own transport would use it."""
    import urllib.request
    from urllib.parse import urlsplit

    url = urlsplit(base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com")
    if urllib.request.proxy_bypass_environment(url.hostname or ""):
        return None
    return urllib.request.getproxies_environment().get(url.scheme or "https")


def _http_client(deadline_s: float, max_bytes: int = MAX_REPLY_BYTES,
                 base_url: str | None = None):
    """An ``httpx2.Client`` whose requests each end within ``deadline_s`` seconds in all and
    whose replies are refused past ``max_bytes`` (see the module's docstring); through the
    environment's proxy for ``base_url``, if it names one."""
    import httpx2
    import openai

    proxy = _env_proxy(base_url)

    class ReplyTooLarge(openai.OpenAIError):  # an OpenAIError: the client passes it on as is
        pass

    class Capped(httpx2.SyncByteStream):
        """The reply's body: at most ``max_bytes`` received and decoded, by the deadline."""

        def __init__(self, inner, encoding: str):
            self.inner, self.seen, self.made = inner, 0, 0
            self.decoder = _decoder(encoding)

        def __iter__(self):
            for chunk in self.inner:
                self.seen += len(chunk)
                if self.seen > max_bytes:
                    raise ReplyTooLarge(f"the reply is over {max_bytes:,} bytes")
                left = _remaining()
                if left is not None and left <= 0:
                    raise httpx2.ReadTimeout("the request's deadline passed while the reply "
                                             "was still arriving")
                if self.decoder is not None:
                    chunk = self.decoder.decompress(chunk, max_bytes - self.made + 1)
                    if self.decoder.unconsumed_tail:
                        raise ReplyTooLarge(f"the reply decompresses to over {max_bytes:,} "
                                            "bytes")
                self.made += len(chunk)
                if self.made > max_bytes:
                    raise ReplyTooLarge(f"the reply decompresses to over {max_bytes:,} bytes")
                yield chunk

        def close(self):
            self.inner.close()

    class Transport(httpx2.HTTPTransport):
        def __init__(self):
            super().__init__(proxy=proxy)
            pool = getattr(self, "_pool", None)  # every socket operation deadline-bound
            if pool is not None and hasattr(pool, "_network_backend"):
                pool._network_backend = _DeadlineBackend(pool._network_backend)

        def handle_request(self, request):
            _DEADLINE.at = time.monotonic() + deadline_s
            request.headers["Accept-Encoding"] = "identity"  # so the cap is the real size
            response = super().handle_request(request)
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
                response.close()
                raise ReplyTooLarge(f"the reply is compressed with {encoding[:40]!r}, which "
                                    "is not accepted (asked for none)")
            headers = [(k, v) for k, v in response.headers.raw
                       if k.lower() not in (b"content-encoding", b"content-length")]
            return httpx2.Response(response.status_code, headers=headers,
                                   stream=Capped(response.stream, encoding),
                                   extensions=response.extensions)

    return httpx2.Client(transport=Transport(), timeout=deadline_s, follow_redirects=False)


def _decoder(encoding: str):
    """A bounded decompressor for ``gzip``/``deflate`` (None: the body is plain)."""
    import zlib

    if encoding in ("gzip", "x-gzip"):
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj(zlib.MAX_WBITS)
    return None


def openai_normals(
    forget_rows: list[dict[str, Any]],
    kind: str,
    k: int,
    *,
    template: str | Template | None = None,
    model: str = DEFAULT_OPENAI_MODEL,
    base_url: str | None = None,
    api_key: str | None = None,
    temperature: float = 1.0,
    top_p: float | None = None,
    max_tokens: int = 256,
    timeout: float = 60.0,
    max_retries: int = 4,
    retry_base_delay: float = 1.0,
    retry_max_delay: float = 30.0,
    max_concurrency: int = 4,
    use_n: bool = True,
    seed: int | None = None,
    progress: Progress | None = None,
    client: Any = None,
) -> GenerationResult:
    """K-1 answers per forget row from a chat model behind an OpenAI-compatible API.

    ``template`` is a shipped template name, a YAML path or a :class:`Template` (default: by
    ``kind``, see :func:`default_template`). ``base_url`` points at any compatible server
    (default: the client's, i.e. ``OPENAI_BASE_URL`` or api.openai.com). ``max_retries`` is
    the number of retries per request after the first attempt. ``client`` replaces the
    ``openai.OpenAI`` client (tests). Rows that fail are left out of the table and listed in
    ``errors``; ``tokens`` sums the ``usage`` of every reply received.
    """
    if kind not in ("qa", "text"):
        raise ValueError(f"kind must be 'qa' or 'text', not {kind!r}")
    if max_concurrency < 1:
        raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
    if max_retries < 0:
        raise ValueError(f"max_retries must be >= 0, got {max_retries}")
    start = time.perf_counter()
    tmpl = load_template(template or default_template(kind, forget_rows))
    tmpl.check(kind)
    secret = api_key or os.environ.get("OPENAI_API_KEY") or None
    if client is None:
        if not secret:
            raise ValueError("no API key: set the environment variable OPENAI_API_KEY (a local "
                             "OpenAI-compatible server accepts any non-empty value)")
        client = _make_client(secret, base_url, timeout)
    params: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens}
    if top_p is not None:
        params["top_p"] = top_p
    if seed is not None:
        params["seed"] = seed
    need = k - 1
    runner = _Runner(client, model, tmpl, kind, need, params, max_retries, retry_base_delay,
                     retry_max_delay, use_n, secret, seed, timeout)
    total = len(forget_rows)
    results: dict[int, list[str]] = {}
    errors: dict[int, str] = {}
    if need > 0 and total:
        done = 0
        if progress is not None:
            progress(0, total)

        def work(i: int) -> list[str]:
            return runner.row(forget_rows[i])

        with ThreadPoolExecutor(max_workers=min(max_concurrency, total),
                                thread_name_prefix="normals-openai") as pool:
            futures = {pool.submit(work, i): i for i in range(total)}
            for future in as_completed(futures):
                i = futures[future]
                try:
                    results[i] = future.result()
                except Exception as exc:
                    errors[i] = _row_error(exc, secret)
                    log.info("forget row %d failed: %s", i, errors[i])
                done += 1
                if progress is not None:
                    progress(done, total)
    elif progress is not None:
        progress(total, total)
    answers = [NormalAnswer(forget_index=i, k=slot, text=text, source="openai")
               for i in sorted(results) for slot, text in enumerate(results[i], start=1)]
    return GenerationResult("openai", NormalTable(answers, k), total, errors=errors,
                            tokens=dict(runner.tokens), elapsed_s=time.perf_counter() - start)


# ------------------------------------------------------------------ registration ------------
@dataclass
class OpenAIConfig:
    """Settings of the OpenAI backend (the API key is not one: it comes from the environment
    variable OPENAI_API_KEY, or the page's password box, and is never written)."""

    template: str | None = param(None, "Prompt template: a name in assets/prompts or a YAML "
                                       "path (empty = by data kind).",
                                 label="prompt template (assets/prompts/, editable)")
    model: str = param(DEFAULT_OPENAI_MODEL, "Chat model name.", label="model")
    base_url: str | None = param(None, "Base URL of an OpenAI-compatible server (empty = "
                                       "OpenAI; vLLM, Ollama, llama.cpp ...).",
                                 label="base URL (empty = OpenAI; any OpenAI-compatible "
                                       "server: vLLM, Ollama, llama.cpp)")
    max_concurrency: int = param(4, "Parallel requests.", min=1, label="concurrent requests")
    temperature: float = param(1.0, "Sampling temperature.", min=0.0, max=2.0, advanced=True)
    top_p: float | None = param(None, "Nucleus sampling (empty = the server's).", min=0.0,
                                max=1.0, advanced=True, hidden=True)
    max_tokens: int = param(256, "Tokens per answer at most.", min=1, advanced=True)
    timeout: float = param(60.0, "Seconds per request in all (connecting, sending, the "
                                 "whole reply); a timed-out request is tried once more.",
                           min=0.1, max=3600.0, advanced=True)
    max_retries: int = param(4, "Retries per request after the first attempt.", min=0,
                             advanced=True)
    retry_base_delay: float = param(1.0, "First backoff delay in seconds.", min=0.0,
                                    advanced=True)
    retry_max_delay: float = param(30.0, "Longest backoff delay (and Retry-After) in "
                                         "seconds.", min=0.0, advanced=True)
    use_n: bool = param(True, "Ask for the K-1 answers in one request (n=K-1) where the "
                              "server honours it.", advanced=True)


@register_backend("openai", OpenAIConfig, rank=2, api_key_env="OPENAI_API_KEY",
                  description="a chat model behind an OpenAI-compatible API, with a prompt "
                              "template",
                  runtime_options=("seed", "progress", "api_key", "client"))
def generate(forget_rows: list[dict[str, Any]], kind: str, k: int,
             **options: Any) -> GenerationResult:
    """K-1 answers per forget row from a chat model behind an OpenAI-compatible API; see
    :func:`openai_normals`."""
    return openai_normals(forget_rows, kind, k, **options)
