"""Answer tokens coloured by their probability, as HTML for ``st.html``: the library gives
the tokens and probabilities (probes, token tables), the UI draws them; and what the Token
probabilities page says about a row (QA: question and answer; text: prompt and
continuation)."""

from __future__ import annotations

import html

from sga_core import workbench as wb


def prob_color(p: float) -> str:
    """Red (0) through yellow to green (1)."""
    p = max(0.0, min(1.0, p))
    r = int(255 * min(1.0, 2 * (1 - p)))
    g = int(200 * min(1.0, 2 * p))
    return f"rgb({r},{g},60)"


def tokens_html(tokens: list[str], probs: list[float], highlight: str | None = None) -> str:
    """Answer tokens as spans coloured by probability (title = the probability). The line
    wraps like text: spaces stay breakable (``pre-wrap``), a line may break between any two
    tokens (``<wbr>``), and a token longer than the line breaks inside (``anywhere``), so a
    long answer never widens the page."""
    spans = []
    for tok, p in zip(tokens, probs):
        border = "border:2px solid #1f4fff;" if highlight and tok.strip() == highlight else ""
        spans.append(f'<span title="p={p:.3f}" style="background:{prob_color(p)};'
                     f'color:#111;padding:1px 2px;margin:1px;border-radius:3px;'
                     f'white-space:pre-wrap;{border}">{html.escape(tok)}</span>')
    return ("<div style='line-height:2;max-width:100%;overflow-wrap:anywhere;"
            "word-break:break-word;white-space:normal'>" + "<wbr>".join(spans) + "</div>")


def row_title(row: dict | None, table: dict | None = None) -> str:
    """A forget row as the row selector shows it: its question (QA), its prompt (text), or
    the prefix the token table recorded (a benchmark's own forget passages)."""
    row = row or {}
    text = ((table or {}).get("prompt") or row.get("question") or row.get("prompt") or
            row.get("text") or "")
    return " ".join(str(text).split())


def reference_text(row: dict | None, table: dict | None = None) -> tuple[str, str]:
    """(what the tokens are called, the text they spell): a QA row's answer, or a text
    row's continuation (as far as the token table scores it)."""
    if row and row.get("answer"):
        return "Answer", str(row["answer"])
    return "Continuation", ("".join((table or {}).get("tokens") or []) or
                            str((row or {}).get("continuation") or "")).strip()


def side_by_side(records_by_run: dict[str, list[dict]], which: str) -> dict[int, dict]:
    """Per row index of set ``which``: its question (QA) or prompt (text), the reference
    answer or continuation, then each run's greedy output by run name."""
    out: dict[int, dict] = {}
    for name, recs in records_by_run.items():
        for rec in recs:
            if rec.get("set") != which or rec.get("generated") is None:
                continue
            entry = out.setdefault(rec["index"], {
                "question": rec.get("question") or rec.get("prompt") or "",
                "reference": rec.get("answer") or rec.get("reference") or ""})
            entry[name] = rec["generated"]
    return out


def attacked_variants(root, chosen: list[str], row: int, names: dict, n_tokens: int) -> dict:
    """The stress-tested variants of the chosen runs for one forget row, as extra rows of
    the token heatmap: ``"<run id> · <attack>"`` -> token record (its display name added to
    ``names``). A record whose answer was cut to another length (a long attacked prompt) is
    left out, so every row lines up token by token."""
    out = {}
    for run_id in chosen:
        for key, rec in wb.attacked_token_tables(root / run_id, row).items():
            if len(rec.get("probs") or []) != n_tokens:
                continue
            name = f"{run_id} · {key}"
            names[name] = f"{names.get(run_id, run_id)} · {key}"
            out[name] = rec
    return out
