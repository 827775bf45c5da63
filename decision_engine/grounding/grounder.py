"""Grounding a request's slots in the document's values: integer and date slots choose among candidates
scored by the model's value chooser, and boolean slots, where the model has a comparison chooser, may
answer by comparing two of them; either way the choice is the slot's first position
(`decoding/grounded_space.py`)."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ..decoding.grounded_space import GroundedSpace
from ..decoding.slot_space import SlotSpace
from ..reader.comparison_chooser import ComparisonChooser, ComparisonTable, comparison_candidates
from ..reader.question_cues import question_cues, with_cues
from ..reader.value_chooser import CandidateTable, ValueChooser, mention_features, question_mention_features
from ..types import Evidence, Question
from .asked_money import asks_for_money, cannot_be_money
from .asked_unit import asked_unit, asks_for_percentage, cannot_count_in
from .candidates import Candidate
from .mention import Mention
from .mentions import find_mentions
from .siblings import AnswerMass, group_sibling_features, sibling_features, slots_answer_mass
from .slot_candidates import candidate_text, is_grounded, merge_derivations, offers_counts, slot_candidates


DOCUMENT_CACHE = 64  # documents whose mentions and candidate tables are kept


@dataclass
class _Grounding:
    """What one document offers its slots, whatever the questions: its mentions, what the chooser reads
    of them, and per slot schema the candidates and their table."""

    mentions: list[Mention]
    features: torch.Tensor | None = None  # `mention_features`, computed once
    by_schema: dict[tuple, tuple[list[Candidate], CandidateTable | None]] = field(default_factory=dict)
    comparison: tuple[list[Candidate], ComparisonTable | None] | None = None  # what booleans compare, once


class Grounder:
    """Turns integer and date slots with candidates into grounded slots, and boolean slots into compared
    ones where there is a comparison chooser; other slots pass through."""

    def __init__(self, chooser: ValueChooser, embedder=None, pointer=None, comparer: ComparisonChooser | None = None):
        from ..retrieval.embedder import SpanEmbedder

        self.chooser = chooser.eval()
        self.comparer = comparer.eval() if comparer is not None else None
        self.embedder = embedder or SpanEmbedder()
        self.pointer = pointer  # a context with `question_evidence` (retrieval/pointed.py), or None
        self._lock = threading.Lock()
        self._documents: OrderedDict[str, _Grounding] = OrderedDict()

    def clear_cache(self) -> None:
        """Forget every document's mentions and candidates."""
        with self._lock:
            self._documents.clear()

    def __call__(
        self, document: str, questions: Sequence[Question], spaces: Sequence[SlotSpace], joint: bool = True
    ) -> list[SlotSpace]:
        """The spaces with integer and date slots grounded (and booleans compared, with a comparer).
        `joint`: the questions are answered together, so each grounded slot also weighs what the
        others answer (`grounding.siblings`); False answers each as if asked alone."""
        out = list(spaces)
        asked = [i for i, q in enumerate(questions) if is_grounded(q.schema) or self._compares(q)]
        if not asked:
            return out
        read = self._read(document)
        mentions = read.mentions
        if not mentions:
            return out
        if read.features is None:
            read.features = mention_features(self.embedder, document, mentions)
        features = read.features
        texts = [questions[i].text for i in asked]
        looked = [None] * len(asked)
        if self.pointer is not None:  # every question pointed at in one pass: the layout asks for them all next
            everything = self.pointer.question_evidence(document, [q.text for q in questions])
            looked = [everything[i] for i in asked]
        vectors = self.embedder.embed_questions(texts)
        cued = with_cues(vectors, question_cues(texts))  # what a value chooser reads of a question; a comparison, the vector alone
        compared: list[tuple[int, torch.Tensor, torch.Tensor]] = []
        pending: list[tuple[int, tuple, list]] = []  # (slot, chooser inputs, candidates)
        for i, vector, read_with_cues, evidence in zip(asked, vectors, cued, looked):
            seen = question_mention_features(features, mentions, evidence)
            if self._compares(questions[i]):
                compared.append((i, vector, seen))
                continue
            candidates, table = self._candidates(read, questions[i].schema)
            if table is None:
                continue
            inputs = (read_with_cues[None], seen[None], table.operations[None], table.operands[None], table.features[None],
                      torch.ones((1, len(candidates)), dtype=torch.bool))
            pending.append((i, inputs, candidates))
        alone = self._choose([inputs for _, inputs, _ in pending])
        chosen = [(i, inputs, candidates, row) for (i, inputs, candidates), row in zip(pending, alone)]  # logits alone
        # per slot, the candidates that cannot count in the unit its question asks for (integers only)
        ruled_out = [_ruled_out(questions[i], candidates, mentions, document) for i, _, candidates, _ in chosen]
        logits = [_without(entry[-1], out) for entry, out in zip(chosen, ruled_out)]
        weighs = joint and (_weighs_siblings(self.chooser) or _weighs_siblings(self.comparer))
        # what each grounded slot answers alone: what the others weigh when asked jointly
        alone = [(entry[2], mentions, row.softmax(-1)[:-1]) for entry, row in zip(chosen, logits)] if weighs else []
        if alone and len(chosen) > 1 and _weighs_siblings(self.chooser):
            again = self._with_siblings([entry[1] for entry in chosen], alone)
            logits = [_without(row, out) for row, out in zip(again, ruled_out)]
        for (i, _, candidates, _), row in zip(chosen, logits):
            kept, row = merge_derivations(candidates, row)
            out[i] = GroundedSpace(spaces[i], [candidate_text(c) for c in kept], row, kept, mentions)
        if compared:
            mass = None
            if alone and _weighs_siblings(self.comparer):
                mass = slots_answer_mass(alone)
            for i, space in zip([i for i, _, _ in compared], self._compared(read, spaces, compared, mass)):
                out[i] = space or spaces[i]
        return out

    def _choose(self, inputs: list[tuple], siblings: list[torch.Tensor] | None = None) -> list[torch.Tensor]:
        """Each slot's chooser logits (K + 1,) from its chooser `inputs` (a batch of one) and, where
        given, its `siblings` features (K, SIBLING_FEATURES), every slot in one pass: candidates are
        padded to the most any slot has, as invalid ones."""
        if not inputs:
            return []
        widest = max(x[2].shape[1] for x in inputs)

        def padded(t: torch.Tensor, value) -> torch.Tensor:  # (1, K, ...) -> (1, widest, ...)
            extra = t.new_full((1, widest - t.shape[1], *t.shape[2:]), value)
            return torch.cat([t, extra], dim=1)

        batch = [torch.cat([x[0] for x in inputs]), torch.cat([x[1] for x in inputs])]
        batch += [torch.cat([padded(x[part], value) for x in inputs]) for part, value in ((2, 0), (3, -1), (4, 0.0), (5, False))]
        with torch.no_grad():
            if siblings is None:
                logits = self.chooser(*batch)
            else:
                logits = self.chooser(*batch, siblings=torch.cat([padded(f[None], 0.0) for f in siblings]))
        return [torch.cat([row[: x[2].shape[1]], row[-1:]]) for row, x in zip(logits, inputs)]

    def _with_siblings(self, inputs: list[tuple], alone: list) -> list[torch.Tensor]:
        """Each slot's logits again (from its chooser `inputs`), now weighing what the slots surer of
        theirs answer `alone` (`grounding.siblings.group_sibling_features`)."""
        return self._choose(inputs, group_sibling_features(alone))

    def _compares(self, question: Question) -> bool:
        return self.comparer is not None and question.schema.type == "boolean"

    def _compared(self, read: _Grounding, spaces, asked, mass: AnswerMass | None = None) -> list[SlotSpace | None]:
        """Boolean slots whose choice position answers false or true by a comparison, or leaves the
        answer to the model ("write"), all asked in one pass; None where the document offers nothing
        to compare. asked: (slot, question vector, its mention features) per boolean question; `mass`:
        what the request's grounded slots answer, for a comparer that weighs it (`grounding.siblings`)."""
        with self._lock:
            if read.comparison is None:
                candidates = comparison_candidates(read.mentions)
                read.comparison = (candidates, ComparisonTable.of(candidates, read.mentions) if candidates else None)
            candidates, compared = read.comparison
        if compared is None:
            return [None] * len(asked)
        t, n = compared.table, len(asked)
        inputs = (
            torch.stack([v for _, v, _ in asked]), torch.stack([m for _, _, m in asked]),
            *(x[None].expand(n, *x.shape) for x in (t.operations, t.operands, t.features)),
            torch.ones((n, len(candidates)), dtype=torch.bool),
            *(x[None].expand(n, *x.shape) for x in (compared.less_equal, compared.less, compared.comparable)),
        )
        siblings = None
        if mass is not None:
            siblings = sibling_features(candidates, read.mentions, mass)[None].expand(n, -1, -1)
        with torch.no_grad():
            logits, pairs = self.comparer.decide(*inputs, siblings=siblings)
        out, alone = [], self.comparer.answers_alone
        for (i, _, _), row, (left, right) in zip(asked, logits, pairs):
            pair = compared_pair(candidates[left], candidates[right])
            out.append(GroundedSpace(spaces[i], [False, True], row, [pair, pair], read.mentions, alone=alone))
        return out

    def _read(self, document: str) -> _Grounding:
        digest = hashlib.sha256(document.encode("utf-8")).hexdigest()
        with self._lock:
            read = self._documents.get(digest)
            if read is None:
                read = self._documents[digest] = _Grounding(find_mentions(document))
                while len(self._documents) > DOCUMENT_CACHE:
                    self._documents.popitem(last=False)
            self._documents.move_to_end(digest)
            return read

    def _candidates(self, read: _Grounding, schema) -> tuple[list[Candidate], CandidateTable | None]:
        """The slot's candidates over the document's mentions and their table (None without any)."""
        key = (schema.type, schema.format, schema.minimum, schema.maximum, schema.formatMinimum, schema.formatMaximum)
        with self._lock:
            found = read.by_schema.get(key)
        if found is None:
            candidates = slot_candidates(schema, read.mentions, offers_counts(self.chooser))
            table = CandidateTable.of(candidates, read.mentions) if candidates else None
            found = (candidates, table)
            with self._lock:
                read.by_schema[key] = found
        return found


def _ruled_out(question: Question, candidates: Sequence[Candidate], mentions, document: str) -> torch.Tensor | None:
    """(K,) True on an integer slot's candidates that cannot count in the unit its question asks for
    (`asked_unit`), answer a question asking for a percentage, or be the amount of money it asks for
    (`asked_money`); None for other slots and where nothing is ruled out."""
    if question.schema.type != "integer":
        return None
    out = cannot_count_in(candidates, mentions, asked_unit(question.text), asks_for_percentage(question.text))
    if asks_for_money(question.text):
        out = [a or b for a, b in zip(out, cannot_be_money(candidates, mentions, document))]
    return torch.tensor(out, dtype=torch.bool) if any(out) else None


def _without(logits: torch.Tensor, ruled_out: torch.Tensor | None) -> torch.Tensor:
    """Chooser logits (K + 1,) with the ruled-out candidates at -inf; "write", last, stays."""
    if ruled_out is None:
        return logits
    return torch.cat([logits[:-1].masked_fill(ruled_out, float("-inf")), logits[-1:]])


def _weighs_siblings(part) -> bool:
    """Whether a chooser (or comparer) has fitted weights for what the other questions answer."""
    return part is not None and any(name.endswith("sibling") and bool(p.any()) for name, p in part.named_parameters())


def grounded_evidence(space: SlotSpace, pattern: Sequence[int | None], confidence: float) -> list[Evidence]:
    """The mentions a grounded slot's chosen value was computed from (empty where it wrote digits)."""
    if not isinstance(space, GroundedSpace):
        return []
    k = space.chosen(pattern)
    if k is None or not space.candidates:
        return []
    used = [space.mentions[j] for j in space.candidates[k].operands]
    return [Evidence(start=m.start, end=m.end, text=m.text, score=round(confidence, 4)) for m in used]


def compared_pair(left: Candidate, right: Candidate) -> Candidate:
    """The pair a compared boolean rests on, as one candidate whose operands are both sides' mentions."""
    return Candidate(left.value, "compare", left.operands + right.operands, (left.describe(), right.describe()))


def grounder_for_model(model, context=None) -> Grounder | None:
    """The grounder of a model with a value chooser (None for others), sharing the context's sentence
    encoder where it has one, so the base encoder loads once, and its span pointer's evidence where
    it has one (the chooser reads which mentions it lays beside each question). A comparison chooser,
    where the model has one, answers boolean slots too; generic value choosers, where it has them,
    answer the slots its value chooser is unsure of (`reader/fallback_chooser.py`)."""
    from ..reader.fallback_chooser import grounding_chooser

    chooser = grounding_chooser(model)
    if chooser is None:
        return None
    pointer = context if hasattr(context, "question_evidence") else None
    return Grounder(chooser, getattr(context, "embedder", None), pointer, getattr(model, "comparison_chooser", None))
