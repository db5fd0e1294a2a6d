"""Answer tokens coloured by their probability, as HTML for ``st.html``: the library gives
the tokens and probabilities (probes, token tables), the UI draws them."""

from __future__ import annotations

import html


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
