"""Grounding a request's integer and date slots: candidates from the document's mentions, scored by
the model's value chooser, become each slot's choice position (`decoding/grounded_space.py`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from ..decoding.grounded_space import GroundedSpace
from ..decoding.slot_space import SlotSpace
from ..reader.value_chooser import CandidateTable, ValueChooser, mention_features, question_mention_features
from ..types import Evidence, Question
from .mentions import find_mentions
from .slot_candidates import candidate_text, is_grounded, slot_candidates


class Grounder:
    """Turns integer and date slots with candidates into grounded slots; other slots pass through."""

    def __init__(self, chooser: ValueChooser, embedder=None, pointer=None):
        from ..retrieval.embedder import SpanEmbedder

        self.chooser = chooser.eval()
        self.embedder = embedder or SpanEmbedder()
        self.pointer = pointer  # a context with `question_evidence` (retrieval/pointed.py), or None

    def __call__(self, document: str, questions: Sequence[Question], spaces: Sequence[SlotSpace]) -> list[SlotSpace]:
        out = list(spaces)
        asked = [i for i, q in enumerate(questions) if is_grounded(q.schema)]
        if not asked:
            return out
        mentions = find_mentions(document)
        if not mentions:
            return out
        features = mention_features(self.embedder, document, mentions)
        texts = [questions[i].text for i in asked]
        vectors = self.embedder.embed_questions(texts)
        looked = self.pointer.question_evidence(document, texts) if self.pointer is not None else [None] * len(asked)
        for i, vector, evidence in zip(asked, vectors, looked):
            candidates = slot_candidates(questions[i].schema, mentions)
            if not candidates:
                continue
            table = CandidateTable.of(candidates, mentions)
            with torch.no_grad():
                seen = question_mention_features(features, mentions, evidence)
                logits = self.chooser(
                    vector[None], seen[None], table.operations[None], table.operands[None], table.features[None],
                    torch.ones((1, len(candidates)), dtype=torch.bool),
                )[0]
            values = [candidate_text(c) for c in candidates]
            out[i] = GroundedSpace(spaces[i], values, logits, candidates, mentions)
        return out


def grounded_evidence(space: SlotSpace, pattern: Sequence[int | None], confidence: float) -> list[Evidence]:
    """The mentions a grounded slot's chosen value was computed from (empty where it wrote digits)."""
    if not isinstance(space, GroundedSpace):
        return []
    k = space.chosen(pattern)
    if k is None or not space.candidates:
        return []
    used = [space.mentions[j] for j in space.candidates[k].operands]
    return [Evidence(start=m.start, end=m.end, text=m.text, score=round(confidence, 4)) for m in used]


def grounder_for_model(model, context=None) -> Grounder | None:
    """The grounder of a model with a value chooser (None for others), sharing the context's sentence
    encoder where it has one, so the base encoder loads once, and its span pointer's evidence where
    it has one (the chooser reads which mentions it lays beside each question)."""
    chooser = getattr(model, "value_chooser", None)
    if chooser is None:
        return None
    pointer = context if hasattr(context, "question_evidence") else None
    return Grounder(chooser, getattr(context, "embedder", None), pointer)
