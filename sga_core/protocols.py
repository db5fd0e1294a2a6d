"""Evaluation protocols: named presets of everything around the metric formulas (generation
lengths, rows evaluated, prompt formats, truth-ratio denominators, epsilon handling, few-shot
KnowMem, text lengths, utility tasks), each following a benchmark's own code.

- ``demo``: the workbench's fast settings of its own (48 new tokens, 40 evenly spaced retain
  rows, the run's 256-token limit, zero-shot KnowMem). Quick to run on a CPU; its numbers do
  NOT compare with published tables.
- ``tofu``: TOFU as open-unlearning evaluates it (``configs/eval/tofu.yaml`` and
  ``tofu_metrics/*``): greedy answers to 200 new tokens (``configs/generation/default.yaml``),
  every ``retain_perturbed`` row, texts up to 512 tokens (``QADataset``), the truth-ratio
  denominators of TOFU's ``config/eval_everything.yaml`` (``base_answer_key``: the paraphrase
  on forget and retain, the answer on the real-world sets), open-unlearning's 1e-10 epsilons.
- ``muse``: MUSE as its own ``eval.py`` runs it (swj0419/muse_bench): KnowMem with few-shot
  ICL prompts ``Question: q\\nAnswer: a\\n\\n``, 32 new tokens, cut at ``"\\n\\n"``,
  ``"\\nQuestion"``, ``"Question:"``; VerbMem with 128 new tokens against the first 128
  ground-truth tokens; ROUGE without stemming (``metrics/logger.py``); texts up to 2048
  tokens (open-unlearning's ``MUSE_*`` datasets); PrivLeak in MUSE's convention.
- ``wmdp``: WMDP (hazardous knowledge) as lm-evaluation-harness scores it: accuracy on the
  ``wmdp_bio`` / ``wmdp_cyber`` / ``wmdp_chem`` multiple-choice sets (forget quality: lower
  is better, chance 0.25) and on ``mmlu`` (utility), each choice's log-likelihood after
  lm-eval's prompt (:mod:`sga_core.metrics.multiple_choice`); texts up to 512 tokens
  (open-unlearning's ``WMDP_*`` datasets), perplexity of 100 retain texts; no MUSE metrics.
- ``copyright``: the Harry Potter task as FLAT runs it (UCSC-REAL/FLAT ``evaluate.py``):
  greedy completions of the book's prompts (600 tokens in all: 400 new ones after FLAT's
  200-token prompts), BLEU (sacrebleu) and ROUGE-L recall, the FQ gap against the retained
  model, Wikitext perplexity and the paper's 9 zero-shot tasks through lm-evaluation-harness.

Each protocol is one :func:`register_protocol` call below; the config's choices
(``eval.protocol``), the CLI's ``--protocol`` / ``--eval-protocol`` and the metric catalog's
protocol names are read from :data:`PROTOCOLS`. (A leaf module, so that the config and the
catalog can read it without importing the evaluation.)

Where a protocol differs from its reference, :data:`DEVIATIONS` says what, why and how much
(the README lists them too).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

# the prompt formats a QA question can be wrapped in: (user start, user end, answer start)
PROMPT_FORMATS: dict[str, tuple[str, str, str] | None] = {
    "chat": None,  # the tokenizer's own chat template (plain Question/Answer without one)
    "llama2": ("[INST] ", " [/INST]", ""),  # TOFU config/model_config.yaml llama2-7b
    "question-answer": ("Question: ", "\n", "Answer: "),  # TOFU phi / stablelm / pythia
}

# FLAT evaluate.py eval_few_shots: the paper's nine zero-shot tasks (accuracy averaged)
ZERO_SHOT_TASKS = ("boolq", "rte", "hellaswag", "winogrande", "arc_challenge", "arc_easy",
                   "openbookqa", "piqa", "truthfulqa")
WIKITEXT_TASK = "wikitext"  # FLAT evaluate.py eval_ppl: word perplexity
MUSE_STOP_STRINGS = ("\n\n", "\nQuestion", "Question:")  # muse_bench metrics/knowmem.py
OPEN_UNLEARNING_EPSILON = 1e-10


@dataclass(frozen=True)
class Protocol:
    """One evaluation protocol (see the module docstring)."""

    name: str
    title: str
    reference: str  # the code it follows
    fast: bool = False  # the demo's own fast settings (not comparable with published tables)
    qa_new_tokens: int = 48  # greedy answer length of QA rows (ROUGE)
    max_retain_rows: int = 40  # 0 = every retain row
    max_length: int | None = None  # token limit of every sequence; None = the run's own
    prompt_format: str = "chat"  # a PROMPT_FORMATS key
    tr_denominator: str = "paraphrase-if-any"  # or "tofu" (see truth_ratio_denominator)
    epsilon: float = 0.0  # 0 = exact log-domain ratios; 1e-10 = open-unlearning's
    rouge_stemmer: bool = True
    verbmem_new_tokens: int = 128
    verbmem_gt_tokens: int | None = None  # cut VerbMem's ground truth to N tokens (MUSE)
    knowmem_new_tokens: int | None = None  # None = qa_new_tokens
    knowmem_icl: bool = False  # few-shot prompts from the <set>_icl sets (MUSE)
    stop_strings: tuple[str, ...] = ()  # KnowMem answers are cut at these (MUSE)
    completion_new_tokens: int = 400  # copyright completions (FLAT)
    lm_eval_tasks: tuple[str, ...] = ()  # utility through lm-evaluation-harness
    multiple_choice: bool = False  # scores multiple-choice sets, not MUSE's text metrics

    def settings(self) -> dict:
        """The protocol as a plain dict (written into summary.json)."""
        return asdict(self)

    def summary(self) -> str:
        """Its settings in one line (the Data and Train pages, ``project show``)."""
        if self.multiple_choice:
            return (f"accuracy on the multiple-choice sets (lm-eval's zero-shot prompts, each "
                    f"choice's log-likelihood); texts up to {self.max_length} tokens; "
                    f"perplexity of {self.max_retain_rows or 'every'} retain rows")
        parts = [f"{self.qa_new_tokens} new tokens per QA answer",
                 f"{self.max_retain_rows} retain rows" if self.max_retain_rows else
                 "every retain row",
                 f"texts up to {self.max_length} tokens" if self.max_length else
                 "the run's own token limit",
                 f"KnowMem {'few-shot (<set>_icl)' if self.knowmem_icl else 'zero-shot'}, "
                 f"{self.knowmem_new_tokens or self.qa_new_tokens} tokens",
                 f"VerbMem {self.verbmem_new_tokens} new tokens" +
                 (f" against the first {self.verbmem_gt_tokens} true ones"
                  if self.verbmem_gt_tokens else "")]
        if self.lm_eval_tasks:
            parts.append(f"completions of {self.completion_new_tokens} tokens, lm-eval: "
                         f"{', '.join(self.lm_eval_tasks)}")
        if self.epsilon:
            parts.append(f"epsilon {self.epsilon:g}")
        return "; ".join(parts)

    def describe(self) -> str:
        """One line for the Results page."""
        if self.fast:
            return (f"{self.title}: the workbench's fast settings of its own ("
                    f"{self.qa_new_tokens} new tokens per answer, "
                    f"{self.max_retain_rows or 'all'} retain rows, zero-shot KnowMem); "
                    "not comparable with published tables")
        return f"{self.title}: follows {self.reference}"


#: Every protocol by name, in the order registered (the order the CLI and forms offer them).
#: The config's choices, the CLI's ``--protocol`` / ``--eval-protocol`` choices and the metric
#: catalog's protocol names are all read from here: a new protocol is one
#: :func:`register_protocol` call below.
PROTOCOLS: dict[str, Protocol] = {}


def register_protocol(protocol: Protocol) -> Protocol:
    """Add ``protocol`` to :data:`PROTOCOLS` (its name must be new and lower-case)."""
    if not protocol.name or protocol.name != protocol.name.strip().lower():
        raise ValueError(f"protocol name {protocol.name!r}: a lower-case word is required")
    if protocol.name in PROTOCOLS:
        raise ValueError(f"protocol {protocol.name!r} is registered twice")
    PROTOCOLS[protocol.name] = protocol
    return protocol


def registered_protocols() -> list[Protocol]:
    """Every registered protocol, in registration order (the Data page's choices)."""
    return list(PROTOCOLS.values())


def protocol_names() -> tuple[str, ...]:
    """The registered protocols' names, in registration order."""
    return tuple(PROTOCOLS)


register_protocol(Protocol("demo", "Demo protocol", "this workbench (fast CPU settings)",
                           fast=True))
register_protocol(Protocol(
    "tofu", "TOFU protocol",
    "TOFU (Maini et al. 2024) as open-unlearning evaluates it: "
    "configs/eval/tofu.yaml, tofu_metrics/*, configs/generation/default.yaml",
    qa_new_tokens=200, max_retain_rows=0, max_length=512, tr_denominator="tofu",
    epsilon=OPEN_UNLEARNING_EPSILON))
register_protocol(Protocol(
    "muse", "MUSE protocol",
    "MUSE (Shi et al. 2024): swj0419/muse_bench eval.py and metrics/*.py; "
    "open-unlearning configs/eval/muse_metrics/*",
    qa_new_tokens=32, max_retain_rows=0, max_length=2048, rouge_stemmer=False,
    verbmem_gt_tokens=128, knowmem_new_tokens=32, knowmem_icl=True,
    stop_strings=MUSE_STOP_STRINGS))
register_protocol(Protocol(
    "copyright", "Copyright protocol (FLAT)",
    "FLAT (Wang et al. 2025) evaluate.py: eval_leakage_rate, eval_ppl, eval_few_shots",
    max_retain_rows=0, max_length=1024, completion_new_tokens=400,
    lm_eval_tasks=(WIKITEXT_TASK, *ZERO_SHOT_TASKS)))
register_protocol(Protocol(
    "wmdp", "WMDP protocol",
    "WMDP (Li et al. 2024) as lm-evaluation-harness scores it (lm_eval/tasks/wmdp, "
    "mmlu/default: zero-shot multiple choice, acc) and open-unlearning evaluates it "
    "(configs/experiment/eval/wmdp: wmdp_<split> and mmlu)",
    max_retain_rows=100, max_length=512, multiple_choice=True))

# ------------------------------------------------------------------ set roles -------------
@dataclass(frozen=True)
class SetRole:
    """What an evaluation set named ``name`` does (the evaluation reads sets by name):
    ``replaces`` the project's forget or retain rows in the evaluation, or is read as itself
    by the metrics whose sets include ``name`` (the metric catalog's ``on``). The words a
    page shows are built from this and the catalog under the project's protocol
    (:func:`sga_core.projects.eval_sets.role_words`)."""

    name: str
    kinds: tuple[str, ...]  # the project kinds it applies to ("qa", "text")
    data_kind: str  # the data kind the set must have: "qa", "text" or "auto"
    replaces: str | None = None  # "forget" / "retain"
    what: str = ""  # what its rows are, in a few words


#: Every set name that gives a set a role (a name ending in ICL_SUFFIX is the few-shot
#: examples of the set it names); adding a set under one of these is confirmed first.
SET_ROLES: dict[str, SetRole] = {}
ICL_SUFFIX = "_icl"


def register_role(role: SetRole) -> SetRole:
    if role.name in SET_ROLES:
        raise ValueError(f"set role {role.name!r} is registered twice")
    SET_ROLES[role.name] = role
    return role


register_role(SetRole("forget_eval", ("qa", "text"), "auto", replaces="forget",
                      what="a benchmark's own forget evaluation rows (MUSE: verbmem/forget)"))
register_role(SetRole("retain_eval", ("qa", "text"), "auto", replaces="retain",
                      what="a benchmark's own retain evaluation rows (TOFU: retain_perturbed)"))
# holdout: text in a text project, QA in a QA project (a QA project's sets are all QA)
register_role(SetRole("holdout", ("qa", "text"), "text",
                      what="rows never trained on (MUSE: privleak/holdout; TOFU: holdout10)"))
register_role(SetRole("forget_qa", ("text",), "qa",
                      what="questions about the forget documents (MUSE: knowmem/forget_qa)"))
register_role(SetRole("retain_qa", ("text",), "qa",
                      what="questions about the retain documents (MUSE: knowmem/retain_qa)"))


def set_role(project_kind: str, name: str) -> SetRole | None:
    """The role a set's name gives it in a project of ``project_kind`` (None: no role)."""
    role = SET_ROLES.get(name)
    if role is not None and project_kind in role.kinds:
        return role
    if name.endswith(ICL_SUFFIX) and project_kind == "text":
        return SetRole(name, ("text",), "qa", what=f"few-shot examples for "
                                                  f"{name[:-len(ICL_SUFFIX)]}")
    return None


#: Every known difference from the references: (protocol, what, why, how large).
DEVIATIONS: tuple[tuple[str, str, str, str], ...] = (
    ("demo", "48 new tokens per answer, 40 evenly spaced retain rows, 256-token texts, "
             "zero-shot KnowMem with 48 tokens, VerbMem ground truth not cut",
     "a full TOFU protocol takes hours on a 2-core CPU; the demo is for trying things",
     "on SmolLM2 with the demo, 64 of 90 answers hit the 48-token cap and forget ROUGE-L "
     "moves from 0.378 to 0.444 at 200 tokens"),
    ("tofu", "200 NEW tokens (open-unlearning) where TOFU's own eval_everything.yaml caps "
             "the whole sequence at max_length 200",
     "the issue and open-unlearning, the community's reference, use max_new_tokens 200",
     "only answers longer than about 200 - prompt tokens differ; TOFU answers are one or "
     "two sentences"),
    ("tofu", "every retain_perturbed row (400), where TOFU's eval_everything.yaml evaluates "
             "the first ds_size = 300",
     "open-unlearning evaluates all 400 (TOFU_QA_retain_eval)",
     "MU over 400 instead of 300 retain rows; the same rows in both"),
    ("tofu", "epsilon 1e-10 in the probability domain (open-unlearning); TOFU's own code "
             "computes truth ratios in the log domain",
     "published tables come from open-unlearning; a collapsed model's numbers then match",
     "none while answer probabilities are above about 1e-8; a collapsed model's retain "
     "truth-ratio score is about 1 with the epsilon and 0 in the log domain"),
    ("tofu", "prompts use the tokenizer's chat template unless eval.prompt_format names the "
             "benchmark's tags (llama2: [INST] q [/INST]; question-answer: Question:/Answer:)",
     "the workbench fine-tunes with the chat template; the evaluation must ask the way the "
     "model was trained", "choose llama2 for TOFU's own Llama-2 checkpoints"),
    ("tofu", "the GradNorm attack runs only when asked for (eval.mia_gradnorm), in eval mode; "
             "open-unlearning's tofu_metrics/mia_gradnorm.yaml runs it when listed, switching "
             "the model to train mode", "it costs a forward and backward pass per forget and "
             "holdout row; eval mode keeps it deterministic", "none for Llama-family models "
             "(no dropout): the gradient norms agree to 1e-6 (tests/unit/metrics/"
             "test_mia_qa.py)"),
    ("muse", "Min-K% takes at least one token (open-unlearning: max(1, int(n * k))); MUSE's "
             "own code takes int(n * k) tokens, NaN for texts under 3 tokens",
     "a NaN score would drop the whole AUC", "none for MUSE-News texts (hundreds of tokens)"),
    ("muse", "PrivLeak's reference AUC is the retain reference's own (computed and cached) or "
             "eval.retrained_auc; MUSE's eval.py uses its published AUC_RETRAIN constants",
     "the constants hold only for MUSE's Llama-2 retrained model",
     "pass eval.retrained_auc (in this workbench's convention, 1 - MUSE's) to use MUSE's "
     "constant: News forget_holdout Min-40% 0.4772 -> 0.5228"),
    ("muse", "KnowMem / VerbMem are reported in 0..1; MUSE's eval.py multiplies by 100",
     "every ROUGE value of the workbench is in 0..1", "a factor 100 in display only"),
    ("muse", "extraction strength on VerbMem rows scores the continuation given its prompt "
             "with the EOS prediction left out; open-unlearning appends no EOS to "
             "pretraining texts and so leaves out the last real token",
     "one encoder for every text row", "one token of 128 or more"),
    ("muse", "one forget evaluation set per project: an imported MUSE-News project's "
             "forget_eval is the verbmem forget passages, so the Min-K% members of PrivLeak are "
             "those passages; MUSE's eval.py takes them from its privleak/forget split",
     "the evaluation has one forget set; both are forget-corpus text",
     "not measured; both splits are passages of the same forget articles"),
    ("copyright", "an lm-eval group task (truthfulqa) counts once in the zero-shot mean (the "
                  "mean of its subtasks); FLAT's get_average_acc averages every entry of "
                  "the results, so truthfulqa_mc1 and _mc2 count twice",
     "one number per task named in the paper", "one of 9 (or 10) terms of a mean"),
    ("copyright", "completions start from the raw book prefix; FLAT wraps it in '### "
                  "Question:' / '### Answer:' tags and drops the first generated token",
     "the workbench fine-tunes on raw text, so the model continues raw text; FLAT's tags "
     "come from its own fine-tuning format", "none on the metric definitions; the prompt "
     "text differs by the tags"),
    ("copyright", "lm-eval tasks run in-process on the loaded model (HFLM(pretrained=model)); "
                  "FLAT starts `accelerate launch -m lm_eval` as a second process",
     "no second model load, no second process", "none on the numbers"),
    ("copyright", "the zero-shot average is the mean 'acc' over the tasks that report one "
                  "(FLAT's get_average_acc skips truthfulqa_gen likewise)", "as FLAT", "none"),
    ("wmdp", "the multiple-choice sets are scored by the workbench's own scorer matched to "
             "lm-eval's wmdp_* and mmlu tasks (the same prompts, continuations, "
             "log-likelihoods and acc), not by lm-eval itself",
     "lm-eval is optional, and its tasks load their datasets from the hub; the scorer reads "
     "the project's own sets", "none: tests/unit/metrics/test_multiple_choice_parity.py "
                                "compares both on the same rows (log-likelihoods to 1e-4)"),
    ("wmdp", "a prompt longer than the model's context keeps its last max_length tokens; "
             "lm-eval keeps max_length + 1 of them (the last only a target)",
     "one forward never exceeds the model's context", "none for a prompt that fits"),
)


class ProtocolError(ValueError):
    """An unknown protocol or prompt format; the message lists the known ones."""


def get_protocol(name: str | None) -> Protocol:
    """The named protocol ('demo' when None or empty)."""
    key = (name or "demo").strip().lower()
    if key not in PROTOCOLS:
        raise ProtocolError(f"unknown evaluation protocol {name!r} (known: "
                            f"{', '.join(PROTOCOLS)})")
    return PROTOCOLS[key]


def check_prompt_format(name: str | None) -> str | None:
    """A PROMPT_FORMATS key, or None for the protocol's own."""
    if name in (None, "", "protocol"):
        return None
    if name not in PROMPT_FORMATS:
        raise ProtocolError(f"unknown prompt format {name!r} (known: "
                            f"{', '.join(PROMPT_FORMATS)})")
    return name

