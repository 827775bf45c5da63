"""Answer-slot layout: the prefix (questions, each marked with its slot index, then the document
context) and the answer block (the concatenation of the slots, every position masked).

`lay_out` is the whole step from a request to its blocks, a pure function of the request and the
model's vocabulary and window: the engine, training and evaluation all lay requests out with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from ..backends.protocol import PrefixInput
from ..backends.vocabulary import Vocabulary
from ..errors import RequestError
from ..reader.absence_gate import AbsenceGate, PassageStrength, is_hypothesis_slot
from ..reader.unmentioned_terms import absence_bias
from ..rules import RuleSet
from ..types import DecisionRequest, Evidence, Mode, Question
from ..validation import Limits, validate_request
from .constraints import GroupConstraints
from .denoise import Block, GroupRun
from .grounded_space import GroundedSpace
from .slot_space import ChoiceSpace, DateSpace, IntegerSpace, SlotSpace, build_space

if TYPE_CHECKING:
    from ..reader.choice_reader import ChoiceReader
    from ..reader.cross_reader import CrossReader
    from ..reader.verdict_reader import VerdictReader

QUESTION_TOKENS = 96  # longest question text kept in the prefix
CHARS_PER_TOKEN_BOUND = 12  # documents are cut to budget * this many characters before tokenizing


def question_tokens(vocab: Vocabulary, texts: Sequence[str]) -> list[list[int]]:
    return [vocab.encode(t)[:QUESTION_TOKENS] for t in texts]


def context_budget(
    vocab: Vocabulary, max_positions: int, questions: Sequence[Sequence[int]], block_len: int, cap: int | None
) -> int:
    """Tokens left for document context once questions, markers, specials and the block are placed."""
    markers = sum(len(vocab.marker_ids[k]) for k in range(len(questions)))
    used = 3 + markers + sum(len(q) for q in questions) + block_len  # [CLS] [SEP] [SEP]
    budget = max_positions - used
    if cap is not None:
        budget = min(budget, cap)
    if budget < 1:
        raise ValueError("questions and answer slots leave no room for the document")
    return budget


@dataclass
class ContextChoice:
    """The document tokens shown to the model, the character ranges they came from, and evidence."""

    token_ids: list[int]
    ranges: list[tuple[int, int]]  # character offsets of the chosen text, in document order
    evidence: list[list[Evidence]]  # per question, best first
    # Where each question gets its own evidence (a span pointer): per question, its tokens (laid beside
    # it, `token_ids` then empty) and the character ranges they came from.
    per_question: list[list[int]] | None = None
    question_ranges: list[list[tuple[int, int]]] | None = None
    # Per question, how strongly the document speaks to it (a span pointer's; None elsewhere).
    strength: list[PassageStrength] | None = None


class Grounding(Protocol):
    """Replaces slot spaces with grounded ones where the document offers candidate values."""

    def __call__(
        self, document: str, questions: Sequence[Question], spaces: Sequence[SlotSpace], joint: bool = True
    ) -> list[SlotSpace]: ...


class ContextBuilder(Protocol):
    """Chooses the document tokens the model sees for some questions."""

    def __call__(self, document: str, questions: Sequence[str], budget: int) -> ContextChoice: ...


class LeadingContext:
    """The first `budget` tokens of the document; no evidence."""

    def __init__(self, vocab: Vocabulary):
        self.vocab = vocab

    def __call__(self, document: str, questions: Sequence[str], budget: int) -> ContextChoice:
        head = document[: budget * CHARS_PER_TOKEN_BOUND]
        ids = self.vocab.encode(head)
        if len(ids) <= budget:
            return ContextChoice(ids, [(0, len(head))], [[] for _ in questions])
        ids = ids[:budget]
        shown = len(self.vocab.decode(ids))  # approximate: decoding normalises spacing and case
        return ContextChoice(ids, [(0, min(shown, len(head)))], [[] for _ in questions])


def build_prefix(
    vocab: Vocabulary,
    numbered_questions: Sequence[tuple[int, Sequence[int]]],  # (1-based slot number, question tokens)
    context: Sequence[int],
    per_question: Sequence[Sequence[int]] | None = None,
) -> PrefixInput:
    """[CLS] <marker k> question k ... [SEP] context [SEP], with each question token tagged k.

    With `per_question` (each question's own evidence tokens): [CLS] then, per question, <marker k>
    question k [SEP] its evidence, all tagged k and positioned from 1 again, then [SEP]."""
    if per_question is not None:
        return _segmented_prefix(vocab, numbered_questions, per_question)
    ids, slots = [vocab.cls_id], [0]
    for number, tokens in numbered_questions:
        piece = [*vocab.marker_ids[number - 1], *tokens]
        ids.extend(piece)
        slots.extend([number] * len(piece))
    ids.append(vocab.sep_id)
    slots.append(0)
    ids.extend(context)
    slots.extend([0] * len(context))
    ids.append(vocab.sep_id)
    slots.append(0)
    return PrefixInput(ids, slots)


def _segmented_prefix(vocab, numbered_questions, per_question) -> PrefixInput:
    ids, slots, positions = [vocab.cls_id], [0], [0]
    for (number, tokens), evidence in zip(numbered_questions, per_question, strict=True):
        piece = [*vocab.marker_ids[number - 1], *tokens, vocab.sep_id, *evidence]
        ids.extend(piece)
        slots.extend([number] * len(piece))
        positions.extend(range(1, len(piece) + 1))
    ids.append(vocab.sep_id)
    slots.append(0)
    positions.append(max(positions) + 1)
    return PrefixInput(ids, slots, positions=positions)


def _bare_grounded(choice: ContextChoice, spaces: Sequence[SlotSpace]) -> ContextChoice:
    """`choice` without the evidence of slots that read alone (`_reads_alone`): grounded integer and
    date slots, whose value choosers read the document's mentions themselves (measured: the same
    answers, warm requests about a quarter faster), and booleans a comparison answers alone and surely
    (measured: 8 of 3,630 generated answers moved, 3 gained and 4 lost; the bench's prefixes 29%
    shorter). A compared boolean the comparison may hand over keeps its evidence for the reader."""
    if choice.per_question is None or choice.question_ranges is None:
        return choice
    bare = [_reads_alone(space) for space in spaces]
    if not any(bare):
        return choice
    per_question = [[] if alone else tokens for alone, tokens in zip(bare, choice.per_question, strict=True)]
    ranges = [[] if alone else shown for alone, shown in zip(bare, choice.question_ranges, strict=True)]
    return replace(choice, per_question=per_question, question_ranges=ranges)


COMPARED_WRITE_BELOW = 0.01  # a compared boolean whose gate gives "write" less than this is answered by the comparison


def _reads_alone(space: SlotSpace) -> bool:
    """Whether a slot's question needs no evidence beside it: a grounded integer or date slot (its value
    choosers read the mentions themselves), or a boolean the comparison answers alone and is sure to
    answer (its gate leaves "write" below `COMPARED_WRITE_BELOW`; the gate is near 0 or near 1)."""
    if not isinstance(space, GroundedSpace):
        return False
    if isinstance(space.inner, (IntegerSpace, DateSpace)):
        return True
    return space.alone and float(space.choice_logits.softmax(dim=0)[-1]) < COMPARED_WRITE_BELOW


def _shown(choice: ContextChoice, count: int) -> list[list[tuple[int, int]]]:
    """Per question, the document characters its prefix shows."""
    if choice.question_ranges is not None:
        return [list(r) for r in choice.question_ranges]
    return [list(choice.ranges) for _ in range(count)]


@dataclass
class Layout:
    """A request laid out for denoising: its group run (slot spaces, rules, threshold), its blocks,
    and per question the evidence found and the document characters its block shows."""

    request: DecisionRequest
    mode: Mode
    group: GroupRun
    rules: RuleSet
    blocks: list[Block]
    evidence: list[list[Evidence]]  # per question, best first
    shown_ranges: list[list[tuple[int, int]]]  # per question, the document characters its block shows


def lay_out(
    request: DecisionRequest,
    mode: Mode,
    vocab: Vocabulary,
    context: ContextBuilder,
    max_positions: int,
    context_tokens: int | None = None,
    limits: Limits = Limits(),
    reads_documents: bool = False,
    grounder: Grounding | None = None,
    gate: AbsenceGate | None = None,
    verdict: VerdictReader | None = None,
    choices: ChoiceReader | None = None,
    cross: CrossReader | None = None,
) -> Layout:
    """Check `request` and lay it out in `mode`: slot spaces, rules, prefixes and answer blocks.

    `max_positions` is the model's window; `context_tokens` the document-token cap it was trained with
    (a request's own `options.context_tokens` wins). With `reads_documents` the prefixes hold only the
    questions and each names the document, which the model reads whole (up to `READ_CHARS`). A
    `grounder` turns integer and date slots into grounded ones (a choice among the document's values).
    A `gate` shifts the odds of hypothesis slots' absence choices by how strongly the context builder
    found a passage for each question (`reader/absence_gate.py`); a `verdict` reader adds its
    log-probability of each verdict, read from the evidence the context builder reports for each
    question (`reader/verdict_reader.py`). A `choices` reader adds its log-probability of each choice
    of boolean and enum slots, read from the document's span vectors (`reader/choice_reader.py`), and
    a `cross` reader its own, read from each question's reported evidence (`reader/cross_reader.py`).
    A fact question whose subject the document never names leans to its absence choice
    (`reader/unmentioned_terms.py`). Raises RequestError for a request that cannot be laid out.
    """
    validate_request(request, limits)
    rules = RuleSet.compile([q.schema for q in request.questions], [q.id for q in request.questions], request.rules)
    spaces = [
        build_space(q.schema, vocab, rules.classes[i], f"questions[{i}].schema") for i, q in enumerate(request.questions)
    ]
    if grounder is not None:
        spaces = grounder(request.document.text, request.questions, spaces, joint=mode != "independent")
    options = request.options
    cap = options.context_tokens or context_tokens
    lengths = [s.length for s in spaces]
    max_steps = options.max_steps or (sum(lengths) if mode != "independent" else max(lengths))
    group = GroupRun(GroupConstraints(spaces, rules), options.threshold, max_steps)
    texts = [q.text for q in request.questions]
    questions = question_tokens(vocab, texts)
    document = request.document.text
    slots = list(range(len(spaces)))
    _bias_choices(choices, context, document, spaces, texts)
    _bias_unnamed(spaces, texts, document)

    def budget(asked: list[list[int]], block_len: int) -> int:
        try:
            return context_budget(vocab, max_positions, asked, block_len, cap)
        except ValueError as error:
            raise RequestError("questions", f"{error} (the model holds {max_positions} tokens)") from None

    if reads_documents:
        return _lay_out_read(request, mode, vocab, group, rules, questions, lengths, budget)
    if mode == "independent":
        blocks, evidence, shown = [], [], []
        for s in slots:
            choice = _bare_grounded(context(document, [texts[s]], budget([questions[s]], lengths[s])), [spaces[s]])
            _bias_hypotheses(gate, verdict, [spaces[s]], [texts[s]], choice)  # before its block, which notes its biased positions
            _bias_across(cross, [spaces[s]], [texts[s]], choice)
            prefix = build_prefix(vocab, [(1, questions[s])], choice.token_ids, choice.per_question)
            blocks.append(Block(group, [s], [1], prefix))
            evidence.extend(choice.evidence)
            shown.extend(_shown(choice, 1))
    else:
        choice = _bare_grounded(context(document, texts, budget(questions, sum(lengths))), spaces)
        _bias_hypotheses(gate, verdict, spaces, texts, choice)
        _bias_across(cross, spaces, texts, choice)
        evidence, shown = choice.evidence, _shown(choice, len(slots))
        prefix = build_prefix(vocab, [(s + 1, questions[s]) for s in slots], choice.token_ids, choice.per_question)
        blocks = [Block(group, slots, [s + 1 for s in slots], prefix, sequential=mode == "sequential")]
    return Layout(request, mode, group, rules, blocks, evidence, shown)


def _bias_hypotheses(
    gate: AbsenceGate | None,
    verdict: VerdictReader | None,
    spaces: Sequence[SlotSpace],
    texts: Sequence[str],
    choice: ContextChoice,
) -> None:
    """Give each hypothesis slot its bias: the gate's for its question's strength, plus the verdict
    reader's log-probabilities on its question's reported evidence (other slots get None)."""
    strength = choice.strength
    if gate is not None and strength is not None:
        for space, found, text in zip(spaces, strength, texts, strict=True):
            if isinstance(space, ChoiceSpace) and (bias := gate.choice_bias(space.values, found, text)) is not None:
                space.choice_bias = bias
    if verdict is None or not choice.evidence:
        return
    asked = [i for i, space in enumerate(spaces) if isinstance(space, ChoiceSpace) and is_hypothesis_slot(space.values)]
    if not asked:
        return
    read = verdict.log_probs([texts[i] for i in asked], [[e.text for e in choice.evidence[i]] for i in asked])
    for i, log_probs in zip(asked, read):
        space = spaces[i]
        added = verdict.choice_bias(space.values, log_probs)
        space.choice_bias = [a + b for a, b in zip(space.choice_bias or [0.0] * len(added), added)]


def _bias_choices(
    reader: ChoiceReader | None, context: ContextBuilder, document: str, spaces: Sequence[SlotSpace], texts: Sequence[str]
) -> None:
    """Add the choice reader's log-probabilities to the odds of each boolean and enum slot. For a
    boolean a comparison may answer they go both to the comparison's false and true (a compared
    answer then needs the two to agree) and to the reader's own choice, which counts where the
    comparison hands the slot over. It reads the span vectors of a context builder that embeds spans."""
    embedder = getattr(context, "embedder", None)
    if reader is None or embedder is None:
        return
    from ..reader.choice_reader import choice_text, reads_choices
    from ..retrieval.context import SPAN_CHARS
    from ..retrieval.spans import split_spans

    inner = [getattr(space, "inner", space) for space in spaces]
    asked = [i for i, space in enumerate(inner) if isinstance(space, ChoiceSpace) and reads_choices(space.values)]
    if not asked:
        return
    span_vectors = embedder.embed_spans(document, split_spans(document, SPAN_CHARS))
    questions = embedder.embed_questions([texts[i] for i in asked])
    words = [[choice_text(v) for v in inner[i].values] for i in asked]
    choices = embedder.embed_words([w for each in words for w in each]).split([len(each) for each in words])  # one pass
    for i, read in zip(asked, reader.log_probs(questions, span_vectors, choices)):
        _add_choice_read(spaces[i], read)


def _bias_unnamed(spaces: Sequence[SlotSpace], texts: Sequence[str], document: str) -> None:
    """Lean each fact question whose subject the document never names to its absence choice
    (`reader/unmentioned_terms.py`)."""
    for space, text in zip(spaces, texts):
        if isinstance(space, ChoiceSpace) and (bias := absence_bias(space.values, text, document)) is not None:
            space.choice_bias = [a + b for a, b in zip(space.choice_bias or [0.0] * len(bias), bias)]


def _bias_across(cross: CrossReader | None, spaces: Sequence[SlotSpace], texts: Sequence[str], choice: ContextChoice) -> None:
    """Add the cross reader's log-probabilities, read from each question's reported evidence, to the
    odds of each boolean and enum slot it reads (as `_bias_choices` adds the choice reader's)."""
    if cross is None or not choice.evidence:
        return
    from ..reader.cross_reader import reads_across

    inner = [getattr(space, "inner", space) for space in spaces]
    asked = [i for i, space in enumerate(inner) if isinstance(space, ChoiceSpace) and reads_across(space.values)]
    if not asked:
        return
    read = cross.choice_log_probs(
        [texts[i] for i in asked], [inner[i].values for i in asked], [[e.text for e in choice.evidence[i]] for i in asked]
    )
    for i, log_probs in zip(asked, read):
        _add_choice_read(spaces[i], log_probs)


def _add_choice_read(space: SlotSpace, read: Sequence[float]) -> None:
    """Add per-choice log-probabilities to a boolean or enum slot's odds: to the reader's own choice,
    which for a compared boolean (a `GroundedSpace`) counts where the comparison hands over, and,
    unless the comparison answers alone, to its false and true as well, so a compared answer needs the
    two to agree."""
    inner = getattr(space, "inner", space)
    inner.choice_bias = [a + b for a, b in zip(inner.choice_bias or [0.0] * len(read), read)]
    if isinstance(space, GroundedSpace) and not space.alone:
        for k, value in enumerate(space.values):
            space.choice_logits[k] += read[inner.values.index(value)]


READ_CHARS = 200_000  # a model that reads whole documents reads this many characters; past it, the leading ones


def _lay_out_read(request, mode, vocab, group, rules, questions, lengths, budget) -> Layout:
    """Question-only prefixes that name the document: a reading model attends to all of it."""
    document = request.document.text[:READ_CHARS]
    slots = list(range(len(questions)))
    shown = [[(0, len(document))] for _ in slots]
    evidence: list[list[Evidence]] = [[] for _ in slots]  # filled from the model's pointer once decided
    if mode == "independent":
        blocks = []
        for s in slots:
            budget([questions[s]], lengths[s])  # the question and its slot must fit the window
            prefix = replace(build_prefix(vocab, [(1, questions[s])], []), document=document)
            blocks.append(Block(group, [s], [1], prefix))
    else:
        budget(questions, sum(lengths))
        prefix = replace(build_prefix(vocab, [(s + 1, questions[s]) for s in slots], []), document=document)
        blocks = [Block(group, slots, [s + 1 for s in slots], prefix, sequential=mode == "sequential")]
    return Layout(request, mode, group, rules, blocks, evidence, shown)
