"""A hostile paraphrase server, a real one on 127.0.0.1
(tests/helpers/openai_server.py): a reply trickled a byte at a time (body, endless chunks, or
headers that never end) is cut off at the request's deadline and tried once more at most,
after which the server is taken for hung and the rows not started fail at once; a 100 MB
reply, or a gzip bomb of one, is refused without being read whole; a paraphrase that is a
flood of text is left out. The calls end: each is waited for with a deadline, never for
ever."""

from __future__ import annotations

import threading

import pytest

from sga_core.normals import generate_normals
from sga_core.normals.openai_backend import MAX_REPLY_BYTES
from sga_core.stress import StressSettings
from tests.helpers.openai_server import HUGE

WAIT = 240  # seconds a call may take before the test calls it endless (deadlines are ~1 s)


def ended(fn, *args, **kw):
    """``fn(*args, **kw)`` in a thread, waited for WAIT seconds: its result, or a failure
    saying it never ended."""
    out: dict = {}

    def work():
        try:
            out["value"] = fn(*args, **kw)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(WAIT)
    assert not t.is_alive(), f"{fn.__name__} never ended: a server held it"
    if "error" in out:
        raise out["error"]
    return out["value"]


def rows(*tags):
    return [{"question": f"Who is author [{t}]?", "answer": f"a {t}"} for t in tags]


def ask(server, tags, **kw):
    kw.setdefault("max_concurrency", 1)
    return ended(generate_normals, "openai", rows(*tags), "qa", 2, base_url=server.base_url,
                 api_key="sk-test-key", timeout=1.0, max_retries=4, retry_base_delay=0.001,
                 **kw)


@pytest.mark.parametrize("tag", ["trickle", "chunked", "slow-headers"])
def test_a_trickling_server_is_cut_off_and_then_taken_for_hung(fake_openai, tag):
    res = ask(fake_openai, [tag, "after-1", "after-2"])
    assert set(res.errors) == {0, 1, 2}, res.errors
    assert "did not answer within 1 s" in res.errors[0] and "hung" in res.errors[0]
    assert fake_openai.hits[tag] == 2  # tried once more, not 5 times
    # the rows after it are not sent to the hung server at all
    assert "after-1" not in fake_openai.hits and "after-2" not in fake_openai.hits
    assert "hung" in res.errors[1] and "hung" in res.errors[2]


def test_a_healthy_row_beside_a_hung_one_still_succeeds(fake_openai):
    res = ask(fake_openai, ["trickle", "ok"], max_concurrency=2)
    assert set(res.errors) == {0} and res.table.texts_for(1)


@pytest.mark.parametrize("tag", ["huge", "gzip-bomb"])
def test_a_flood_of_a_reply_is_refused_without_reading_it_whole(fake_openai, tag):
    res = ask(fake_openai, [tag, "ok"])
    assert set(res.errors) == {0}, res.errors
    assert f"over {MAX_REPLY_BYTES:,} bytes" in res.errors[0]
    assert "malformed reply" in res.errors[0]
    assert fake_openai.hits[tag] == 1  # a flood is not asked again
    assert res.table.texts_for(1)  # the next row is unaffected
    if tag == "huge":
        assert fake_openai.sent[tag] < HUGE  # the client hung up early


def test_the_paraphrase_attack_ends_and_says_what_it_left_out(tmp_path, tiny_model_dir,
                                                             fake_openai, monkeypatch):
    """A stress test whose paraphraser trickles, floods, and writes a 200,000-character
    'question': it ends, keeps the good paraphrase, and says why each other was left out."""
    from sga_core.stress.run import stress_model

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    forget = [{"question": f"Which book did author [{t}] write?", "answer": f"Book {t}."}
              for t in ("ask-a", "long-question", "huge", "trickle")]
    st = StressSettings(rouge=False, paraphrase_backend="openai",
                        paraphrase_base_url=fake_openai.base_url, paraphrase_timeout=1.0)
    res = ended(stress_model, str(tiny_model_dir), tmp_path / "out", forget, original=None,
                attacks=["paraphrase"], settings=st)["paraphrase"]
    info = res["cases"][0]["info"]
    assert info["generated"] == 1 and res["cases"][0]["eval_rows"] == [0]
    left = info["left_out"]
    assert "too long" in left["1"], left
    assert f"over {MAX_REPLY_BYTES:,} bytes" in left["2"], left
    assert "did not answer within 1 s" in left["3"], left
    assert all(b.get("max_tokens") == 96 for b in fake_openai.bodies)


def test_the_environment_proxy_is_still_used(monkeypatch):
    """The deadline-bound client keeps what the openai client's own transport honours: the
    environment's proxy for the server, and NO_PROXY."""
    from sga_core.normals.openai_backend import _env_proxy

    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                 "no_proxy", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert _env_proxy(None) is None
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert _env_proxy(None) == "http://proxy.example:3128"
    assert _env_proxy("http://127.0.0.1:8000/v1") is None  # no HTTP_PROXY
    monkeypatch.setenv("NO_PROXY", "api.openai.com")
    assert _env_proxy(None) is None
