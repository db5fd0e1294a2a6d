"""Turning QA and text rows into token sequences with answer-only labels, and padding them.

QA prompts use the tokenizer's chat template when it has one (plain ``Question: ...\\nAnswer:``
otherwise). Labels are -100 on the prompt and on padding; the answer's EOS token is scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

IGNORE = -100


@dataclass
class Sequence:
    """One tokenized sequence: ``input_ids`` and ``labels`` of equal length."""

    input_ids: list[int]
    labels: list[int]
    role: str = "train"
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def n_scored(self) -> int:
        return sum(1 for t in self.labels if t != IGNORE)


class Encoder:
    """Encodes prompts and answers for one tokenizer."""

    def __init__(self, tokenizer, max_length: int = 256, system_prompt: str | None = None,
                 tags: tuple[str, str, str] | None = None):
        self.tok = tokenizer
        self.max_length = max_length
        self.system_prompt = system_prompt
        self.tags = tuple(tags) if tags else None
        self.has_template = bool(getattr(tokenizer, "chat_template", None)) and not self.tags
        self._prompt_cache: dict[str, list[int]] = {}

    @property
    def eos_id(self) -> int:
        return self.tok.eos_token_id

    @property
    def pad_id(self) -> int:
        return self.tok.pad_token_id if self.tok.pad_token_id is not None else self.eos_id

    def prompt_ids(self, question: str) -> list[int]:
        """Token ids of the prompt up to where the answer starts."""
        cached = self._prompt_cache.get(question)
        if cached is not None:
            return cached
        if self.tags:  # TOFU data_module.py: question_start + q + question_end + answer_tag
            start, end, answer_tag = self.tags
            ids = self.tok(start + question + end + answer_tag,
                           add_special_tokens=True)["input_ids"]
        elif self.has_template:
            messages = []
            if self.system_prompt:
                messages.append({"role": "system", "content": self.system_prompt})
            messages.append({"role": "user", "content": question})
            text = self.tok.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=False
            )
            ids = self.tok(text, add_special_tokens=False)["input_ids"]
        else:
            ids = self.tok(f"Question: {question}\nAnswer:", add_special_tokens=True)["input_ids"]
        self._prompt_cache[question] = ids
        return ids

    def answer_ids(self, answer: str, eos: bool = True) -> list[int]:
        text = answer if self.has_template or self.tags else " " + answer.lstrip()
        ids = self.tok(text, add_special_tokens=False)["input_ids"]
        return ids + [self.eos_id] if eos else ids

    def _join(self, prompt: list[int], answer: list[int], role: str, meta: dict) -> Sequence:
        """Concatenate; past ``max_length`` the answer is cut first, then the prompt's start."""
        if len(prompt) + len(answer) > self.max_length:
            answer = answer[: max(self.max_length - len(prompt), 1)]
            prompt = prompt[len(prompt) + len(answer) - self.max_length :]
        return Sequence(prompt + answer, [IGNORE] * len(prompt) + answer, role, meta)

    def qa(self, question: str, answer: str, role: str = "train", **meta) -> Sequence:
        return self._join(self.prompt_ids(question), self.answer_ids(answer), role, meta)

    def text(self, prompt: str, continuation: str, role: str = "train", **meta) -> Sequence:
        """A text row: the prompt (may be empty) is context, the continuation is scored."""
        bos = [self.tok.bos_token_id] if self.tok.bos_token_id is not None else []
        p_ids = bos + (self.tok(prompt, add_special_tokens=False)["input_ids"] if prompt else [])
        sep = " " if prompt and not prompt.endswith((" ", "\n")) else ""
        c_ids = self.tok(sep + continuation, add_special_tokens=False)["input_ids"] + [self.eos_id]
        if not p_ids:  # nothing to predict the first token from: give it a start token
            p_ids = [self.eos_id]
        return self._join(p_ids, c_ids, role, meta)

    def row(self, row: dict, kind: str, answer: str | None = None, role: str = "train", **meta):
        """Encode a data row (``kind`` 'qa' or 'text'), optionally with a substitute answer."""
        if kind == "qa":
            text = row["answer"] if answer is None else answer
            return self.qa(row["question"], text, role, **meta)
        text = row["continuation"] if answer is None else answer
        return self.text(row["prompt"], text, role, **meta)


def collate(seqs: list[Sequence], pad_id: int, padding_side: str = "right"):
    """Pad sequences into ``input_ids``, ``attention_mask`` and ``labels`` tensors."""
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    labels = torch.full((len(seqs), width), IGNORE, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        n = len(s)
        sl = slice(0, n) if padding_side == "right" else slice(width - n, width)
        ids[i, sl] = torch.tensor(s.input_ids)
        labels[i, sl] = torch.tensor(s.labels)
        mask[i, sl] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def padding_efficiency(batches: list[list[Sequence]]) -> float:
    """Real tokens over padded tokens across batches (1.0 = no padding)."""
    real = sum(len(s) for b in batches for s in b)
    padded = sum(len(b) * max(len(s) for s in b) for b in batches if b)
    return real / padded if padded else 1.0
