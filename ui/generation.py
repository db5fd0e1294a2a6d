"""The settings form of normal-answer generation (backend, K, the backend's options); its
defaults are the project's last generation, so a reload keeps them."""

from __future__ import annotations

import streamlit as st

from sga_core import workbench as wb
from ui.forms import kept


def generation_settings(project) -> tuple[str, int, dict, str | None]:
    """Draw the form; returns (backend, K, backend options, API key or None)."""
    last = wb.last_generation(project)  # its settings are the defaults after a reload
    last_opts = last.get("options") or {}
    templates = [t.name for t in wb.list_templates()]
    default_template = last_opts.get("template") if last_opts.get("template") in templates \
        else ("tofu_qa" if project.kind == "qa" else "copyright_continuation")
    last_backend = last.get("backend")

    backend = kept(st.selectbox, "normals.backend", last_backend or "retrieval",
                   label="backend", options=["retrieval", "local", "openai", "idk"],
                   format_func=lambda b: f"{b}: {wb.BACKEND_DESCRIPTIONS.get(b, '')}")
    k = int(kept(st.number_input, "normals.k", project.k, min_value=2, max_value=wb.MAX_K,
                 label="K (forget answer + K-1 normal answers)"))
    options: dict = {}
    api_key = None
    if backend == "retrieval":
        c1, c2 = st.columns(2)
        options["embedding_model"] = kept(
            c1.text_input, "normals.emb", last_opts.get("embedding_model") or "",
            label="embedding model (empty = embedded all-MiniLM-L6-v2; or a folder such as "
                  "bge-large-en-v1.5)") or None
        options["threshold"] = kept(c2.slider, "normals.threshold",
                                    last_opts.get("threshold", 0.5), label="similarity "
                                    "threshold", min_value=0.0, max_value=1.0, step=0.01)
    elif backend in ("openai", "local"):
        options["template"] = kept(st.selectbox, "normals.template", default_template,
                                   label="prompt template (assets/prompts/, editable)",
                                   options=templates)
        c1, c2 = st.columns(2)
        if backend == "openai":
            options["model"] = kept(c1.text_input, "normals.oa_model", last_opts.get(
                "model") if last_backend == "openai" else "gpt-4o-mini", label="model")
            options["base_url"] = kept(
                c2.text_input, "normals.base_url", last_opts.get("base_url") or "",
                label="base URL (empty = OpenAI; any OpenAI-compatible server: vLLM, Ollama, "
                      "llama.cpp)") or None
            api_key = st.text_input("API key (kept in memory only; empty = $OPENAI_API_KEY)",
                                    type="password", key="normals.api_key") or None
            options["max_concurrency"] = int(kept(st.number_input, "normals.conc", 4,
                                                  label="concurrent requests", min_value=1,
                                                  max_value=64))
        else:
            options["model"] = kept(c1.text_input, "normals.local_model", last_opts.get(
                "model") if last_backend == "local" else "embedded:smollm2",
                label="local model")
            options["max_new_tokens"] = int(kept(c2.number_input, "normals.max_new", 64,
                                                 label="max new tokens", min_value=8,
                                                 max_value=512))
    return backend, k, options, api_key
