"""Which engine to build: the typed options every command (and the service) shares, and their flags."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from .types import Mode
from .validation import Limits

Retrieval = Literal["hybrid", "lexical", "leading"]  # dense + BM25 spans, BM25 spans, the document's first tokens
RETRIEVALS: tuple[str, ...] = get_args(Retrieval)
MODES: tuple[str, ...] = get_args(Mode)
Precision = Literal["auto", "float32", "bfloat16", "int8"]  # what forward passes compute in (precision.py)
PRECISIONS: tuple[str, ...] = get_args(Precision)
# a question's evidence budget: at least a clause's worth, at most the document tokens the bundled model
# was trained with (its `context_tokens`)
EVIDENCE_TOKEN_RANGE = (16, 320)


@dataclass(frozen=True)
class EngineOptions:
    """The model, where it runs, how document context is chosen, and what requests it accepts."""

    model: str | None = None  # checkpoint folder; None: the bundled model
    device: str = "cpu"  # torch device, e.g. cpu or cuda
    retrieval: Retrieval = "lexical"  # what inference and training default to
    trust_remote_code: bool = False  # let a Hugging Face checkpoint run its own code
    limits: Limits = Limits()  # size limits on accepted requests
    mask_token_id: int | None = None  # masked diffusion LLMs: the mask token, where config.json does not name it
    block_size: int | None = None  # masked diffusion LLMs: the diffusion block, where config.json does not give it
    loader: str | None = None  # masked diffusion LLMs: the transformers auto class to load with
    # bfloat16 for the bundled model on a CPU that has it natively, else int8 where int8 products are
    # native (VNNI, AMX), else float32
    precision: Precision = "auto"
    # tokens of evidence laid beside each question by a model's span pointer; None: its own (160). Fewer
    # make a request cheaper and may cost accuracy (see the README)
    evidence_tokens: int | None = None

    def __post_init__(self):
        if self.retrieval not in RETRIEVALS:
            raise ValueError(f"retrieval must be one of {', '.join(RETRIEVALS)}, not {self.retrieval!r}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}")
        low, high = EVIDENCE_TOKEN_RANGE
        if self.evidence_tokens is not None and not low <= self.evidence_tokens <= high:
            raise ValueError(f"evidence_tokens must be from {low} to {high}, not {self.evidence_tokens}")

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> EngineOptions:
        """The options parsed from the flags `add_engine_arguments` added."""
        return cls(
            model=args.model,
            device=args.device,
            retrieval=args.retrieval,
            trust_remote_code=args.trust_remote_code,
            mask_token_id=getattr(args, "mask_token_id", None),
            block_size=getattr(args, "block_size", None),
            loader=getattr(args, "loader", None),
            precision=getattr(args, "precision", "auto"),
            evidence_tokens=getattr(args, "evidence_tokens", None),
            limits=Limits(
                max_document_chars=args.max_document_chars,
                max_rules=args.max_rules,
                max_rule_values=args.max_rule_values,
                max_rule_values_total=args.max_rule_values_total,
            ),
        )


def add_engine_arguments(
    parser: argparse.ArgumentParser, *, model: bool = True, devices: Sequence[str] | None = None
) -> None:
    """Add --model, --trust-remote-code, the masked diffusion LLM options (--mask-token-id, --block-size,
    --loader), --device, --retrieval and the request limits (--max-document-chars,
    --max-rules, --max-rule-values, --max-rule-values-total) to `parser`; with `model=False` (training) only
    --device and --retrieval. `devices` restricts --device."""
    defaults = EngineOptions()
    if model:
        parser.add_argument("--model", help='checkpoint folder, or "bundled" (the default: the bundled model)')
        parser.add_argument("--trust-remote-code", action="store_true", help="allow a Hugging Face model's own code")
        parser.add_argument("--mask-token-id", type=_natural, help="masked diffusion LLMs: the mask token's id")
        parser.add_argument("--block-size", type=positive_int, help="masked diffusion LLMs: the diffusion block size")
        parser.add_argument("--loader", choices=DLLM_LOADERS, help="masked diffusion LLMs: the auto class to load with")
    parser.add_argument("--device", default=defaults.device, choices=devices, help="torch device, e.g. cpu or cuda")
    parser.add_argument(
        "--retrieval", choices=RETRIEVALS, default=defaults.retrieval, help="how document context is chosen"
    )
    if model:
        parser.add_argument(
            "--precision", choices=PRECISIONS, default=defaults.precision,
            help="what forward passes compute in (auto, for the bundled model on a CPU: bfloat16 where the CPU has it "
                 "natively, else int8 where it has int8 products, else float32)",
        )
        parser.add_argument(
            "--evidence-tokens", type=_evidence_tokens, metavar="N",
            help="tokens of evidence beside each question, for models with a span pointer such as the bundled "
                 "one (default 160; fewer are faster and may cost accuracy)",
        )
        parser.add_argument(
            "--max-document-chars", type=int, default=defaults.limits.max_document_chars,
            help="longer documents are refused",
        )
        parser.add_argument("--max-rules", type=positive_int, default=defaults.limits.max_rules,
                            help="requests with more rules are refused")
        parser.add_argument("--max-rule-values", type=positive_int, default=defaults.limits.max_rule_values,
                            help="a rule listing more values (if and then together) is refused")
        parser.add_argument("--max-rule-values-total", type=positive_int, default=defaults.limits.max_rule_values_total,
                            help="requests whose rules list more values in all are refused")


DLLM_LOADERS = ("AutoModel", "AutoModelForMaskedLM", "AutoModelForCausalLM")  # see backends/masked_dllm.LOADERS


def _natural(text: str) -> int:
    """An argparse type: a whole number of at least 0."""
    try:
        number = int(text)
    except ValueError:
        number = -1
    if number < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 0")
    return number


def _evidence_tokens(text: str) -> int:
    """An argparse type: a whole number within `EVIDENCE_TOKEN_RANGE`."""
    low, high = EVIDENCE_TOKEN_RANGE
    try:
        number = int(text)
    except ValueError:
        number = low - 1
    if not low <= number <= high:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number from {low} to {high}")
    return number


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return number


def add_mode_argument(parser: argparse.ArgumentParser) -> None:
    """Add --mode, which overrides each request's own mode."""
    parser.add_argument("--mode", choices=MODES, help="override each request's mode")
