"""The value chooser: which of a slot's candidate values (a mention copied, or one step over mentions)
its question asks for, or none of them (the slot writes its digits).

Questions and mentions are read by the frozen base sentence encoder (`retrieval.embedder`), each
mention as its own tokens and a cue: the words before it, or with `fit-chooser --cue around` the
words on both sides of it (`cue_view`; which one is saved with the chooser's weights). The chooser
scores a candidate by what its question wants of each operand under that operation (a bilinear form
per operation and operand role over the mention's vector, kind and place among the document's
values), plus how well the operation suits the question and how the operands lie in the text. Asked jointly,
a candidate's score also weighs what the group's other questions answer (`grounding.siblings`): one
weight per operation on how likely they are to answer its value, its first operand and its later
operands (`ValueChooser.sibling`, fitted by `decision-engine fit-siblings`; zero where unfitted).
Trained on generated groups whose answers rest on known mentions (`training/value_choice.py`), its
scores are the logits of a grounded slot's choice position (`decoding/grounded_space.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import math
from collections import defaultdict

import torch
from torch import nn

from ..grounding.candidates import OPERATIONS, Candidate, in_one_list
from ..grounding.mention import DURATION_UNITS, Mention
from .question_cues import QUESTION_CUES

DIM = 384  # the base sentence encoder's width
MENTION_DIM = 3 * DIM  # see retrieval.embedder.MENTION_DIM: own tokens, the cue before, the cue around
KIND_FEATURES = 6 + len(DURATION_UNITS)  # date, number, percent, money, business, ambiguous, then the unit
PLACE_FEATURES = 7  # where a mention stands among the document's values (see `place_features`)
RELEVANCE_FEATURES = 2  # whether the span pointer lays the mention beside the question (see `relevance_features`)
MENTION_FEATURES = MENTION_DIM + KIND_FEATURES + PLACE_FEATURES + RELEVANCE_FEATURES  # one question's view
READ_FEATURES = MENTION_FEATURES - DIM  # what one chooser reads of it: the mention's own vector and one cue (`cue_view`)
CANDIDATE_FEATURES = 7  # how a candidate's operands lie in the text (see `candidate_features`)
RANK = 64  # width of each operand role's bilinear form
ROLES = 2  # per operation: the first operand, and every later one
MAX_OPERANDS = 4  # sums take up to four amounts
QUESTION_CODE = 16  # the question as the candidate scorer reads it
SIBLING_FEATURES = 3  # how likely the other questions of the group answer a candidate's value, its first operand, its later ones
DROPOUT = 0.7  # on the frozen vectors while training: the chooser must not learn templates by heart


def kind_features(mentions: Sequence[Mention]) -> torch.Tensor:
    """(M, KIND_FEATURES) what each mention is, as 0/1 features."""
    rows = []
    for m in mentions:
        units = [float(m.unit == u) for u in DURATION_UNITS]
        rows.append([
            float(m.kind == "date"), float(m.kind == "number" and m.unit != "percent"), float(m.unit == "percent"),
            float(m.currency is not None), float(m.business), float(m.ambiguous), *units,
        ])
    return torch.tensor(rows, dtype=torch.float32).reshape(len(mentions), KIND_FEATURES)


def place_features(mentions: Sequence[Mention], text_length: int) -> torch.Tensor:
    """(M, PLACE_FEATURES) where each mention stands, whatever the wording around it: its place in the
    text, its value's rank among the distinct values of its kind (and whether it is the latest or
    largest, the earliest or smallest), its order among the mentions of its kind, how many there are,
    and whether its value is written more than once."""
    of_kind: dict[str, list[int]] = defaultdict(list)
    for i, m in enumerate(mentions):
        of_kind[m.kind].append(i)
    written: dict[tuple, int] = defaultdict(int)
    for m in mentions:
        written[(m.kind, m.value)] += 1
    rows = []
    for i, m in enumerate(mentions):
        same = of_kind[m.kind]
        values = sorted({mentions[j].value for j in same})
        rank = values.index(m.value)
        rows.append([
            m.start / max(text_length, 1),
            rank / max(len(values) - 1, 1), float(rank == len(values) - 1), float(rank == 0),
            same.index(i) / max(len(same) - 1, 1), math.log1p(len(same)) / 3, float(written[(m.kind, m.value)] > 1),
        ])
    return torch.tensor(rows, dtype=torch.float32).reshape(len(mentions), PLACE_FEATURES)


def mention_features(embedder, text: str, mentions: Sequence[Mention]) -> torch.Tensor:
    """(M, MENTION_FEATURES - RELEVANCE_FEATURES) what the chooser reads of each mention whatever the
    question: its vectors from the sentence encoder (`SpanEmbedder.embed_mentions`, cached per
    document), its kind and its place (`question_mention_features` adds each question's view)."""
    return torch.cat(
        [embedder.embed_mentions(text, mentions), kind_features(mentions), place_features(mentions, len(text))], dim=1
    )


def relevance_features(mentions: Sequence[Mention], ranked: Sequence[tuple[int, int]] = (),
                       shown: Sequence[tuple[int, int]] = ()) -> torch.Tensor:
    """(M, RELEVANCE_FEATURES) what the span pointer says of each mention for one question: whether it
    lies in the evidence laid beside the question (`shown`, character ranges), and 1 / (1 + rank) of
    the span holding it among the question's best spans (`ranked`, best first; 0 past them). Without
    a pointer both are 0."""
    rows = []
    for m in mentions:
        inside = float(any(a <= m.start and m.end <= b for a, b in shown))
        rank = next((r for r, (a, b) in enumerate(ranked) if a <= m.start and m.end <= b), None)
        rows.append([inside, 0.0 if rank is None else 1 / (1 + rank)])
    return torch.tensor(rows, dtype=torch.float32).reshape(len(mentions), RELEVANCE_FEATURES)


def question_mention_features(document_features: torch.Tensor, mentions: Sequence[Mention], evidence=None) -> torch.Tensor:
    """(M, MENTION_FEATURES) one question's view of the mentions: the document's `mention_features`
    without the relevance columns, then `relevance_features` from that question's `evidence`
    (a `QuestionEvidence`, or None)."""
    ranked, shown = (evidence.ranked, evidence.shown) if evidence is not None else ((), ())
    return torch.cat([document_features, relevance_features(mentions, ranked, shown)], dim=1)


def cue_view(mentions: torch.Tensor, around: bool) -> torch.Tensor:
    """(..., READ_FEATURES) what a chooser reads of (..., MENTION_FEATURES) mention features: the
    mention's own vector, then the cue around it (`around`) or the cue before it, then the rest. The
    cue around reads the same whichever side a document writes the words that say what a value is;
    choosers fitted before it existed read the cue before."""
    own, before, around_cue, rest = mentions.split([DIM, DIM, DIM, mentions.shape[-1] - MENTION_DIM], dim=-1)
    return torch.cat([own, around_cue if around else before, rest], dim=-1)


def candidate_features(candidates: Sequence[Candidate], mentions: Sequence[Mention]) -> torch.Tensor:
    """(K, CANDIDATE_FEATURES) how each candidate's operands lie in the text: whether it has several,
    how far apart they are written, whether the first comes first, how many there are, whether the
    value is zero, whether they are items of one written list (amounts of one kind one after the other
    on one line), and whether they are that whole list."""
    rows = []
    for c in candidates:
        used = [mentions[j] for j in c.operands]
        zero = float(isinstance(c.value, int) and c.value == 0)
        if len(used) > 1:
            spread = max(m.start for m in used) - min(m.start for m in used)
            listed, whole = _list_items(c.operands, mentions)
            rows.append([
                1.0, math.log1p(spread) / 8, float(used[0].start < used[1].start), len(used) / MAX_OPERANDS, zero,
                float(listed), float(whole),
            ])
        else:
            rows.append([0.0, 0.0, 0.0, len(used) / MAX_OPERANDS, zero, 0.0, 0.0])
    return torch.tensor(rows, dtype=torch.float32).reshape(len(candidates), CANDIDATE_FEATURES)


def _list_items(operands: Sequence[int], mentions: Sequence[Mention]) -> tuple[bool, bool]:
    """Whether the operands are items of one written list, and whether they are all of it."""
    ordered = sorted(operands)
    head = mentions[ordered[0]]

    def item(k: int) -> bool:
        return 0 <= k < len(mentions) and in_one_list(head, mentions[k])

    listed = ordered == list(range(ordered[0], ordered[-1] + 1)) and all(item(k) for k in ordered)
    return listed, listed and not item(ordered[0] - 1) and not item(ordered[-1] + 1)


@dataclass
class CandidateTable:
    """A slot's candidates as tensors the chooser scores."""

    operations: torch.Tensor  # (K,) index into OPERATIONS
    operands: torch.Tensor  # (K, MAX_OPERANDS) mention indices, -1 where a candidate has fewer
    features: torch.Tensor  # (K, CANDIDATE_FEATURES)

    @classmethod
    def of(cls, candidates: Sequence[Candidate], mentions: Sequence[Mention]) -> CandidateTable:
        operations = torch.tensor([OPERATIONS.index(c.operation) for c in candidates], dtype=torch.long)
        operands = torch.full((len(candidates), MAX_OPERANDS), -1, dtype=torch.long)
        for k, c in enumerate(candidates):
            operands[k, : len(c.operands)] = torch.tensor(c.operands, dtype=torch.long)
        return cls(operations, operands, candidate_features(candidates, mentions))


class ValueChooser(nn.Module):
    """Logits over each question's candidates, and a last column for writing the digits instead."""

    def __init__(
        self, dim: int = DIM, rank: int = RANK, dropout: float = DROPOUT, around: bool = False,
        operations: int = len(OPERATIONS),
    ):
        super().__init__()
        self.dim, self.rank = dim, rank
        self.operations = operations  # it has forms for the first `operations` of OPERATIONS (see `candidates.COUNT`)
        roles = operations * ROLES
        # Which cue it reads (`cue_view`), saved with its weights: 1 around the mention, 0 before it.
        self.register_buffer("around_cue", torch.tensor(float(around)))
        self.query = nn.Linear(dim, roles * rank)  # per operation and operand role
        self.key = nn.Linear(READ_FEATURES, ROLES * rank)
        self.similarity = nn.Linear(2, ROLES)  # per role, a weight on the cosine of question and mention, and of question and cue
        self.operation = nn.Linear(dim, operations)
        self.question_code = nn.Linear(dim, QUESTION_CODE)
        self.layout = nn.Sequential(  # a candidate's operand layout, read with its operation and question
            nn.Linear(CANDIDATE_FEATURES + QUESTION_CODE + operations, 32), nn.GELU(), nn.Linear(32, 1)
        )
        self.write = nn.Linear(dim, 1)
        # per operation, the weight of SIBLING_FEATURES: zero until fitted, so a chooser scores as it did
        self.sibling = nn.Parameter(torch.zeros(operations, SIBLING_FEATURES))
        # per operation, the weight of each question cue (`question_cues`): zero until fitted, likewise
        self.cue_weights = nn.Parameter(torch.zeros(operations, QUESTION_CUES))
        self.drop = nn.Dropout(dropout)

    def forward(
        self,
        questions: torch.Tensor,  # (B, D) unit question vectors, or (B, D + QUESTION_CUES) with their cues (`with_cues`)
        mentions: torch.Tensor,  # (B, M, MENTION_FEATURES) each row's mentions, zero padded
        operations: torch.Tensor,  # (B, K) operation index per candidate
        operands: torch.Tensor,  # (B, K, MAX_OPERANDS) mention index, -1 where absent
        features: torch.Tensor,  # (B, K, CANDIDATE_FEATURES)
        valid: torch.Tensor,  # (B, K) True on real candidates
        siblings: torch.Tensor | None = None,  # (B, K, SIBLING_FEATURES) what the other questions answer (joint only)
    ) -> torch.Tensor:
        """(B, K + 1) logits; invalid candidates -inf; the last column is "write the digits"."""
        mentions = cue_view(mentions, bool(self.around_cue > 0.5))
        b, m = mentions.shape[:2]
        k, d, ops = operations.shape[1], self.dim, self.operations
        cues = questions[:, d:]
        questions = self.drop(questions[:, :d])  # every part reads the question through dropout, the operand forms twice
        cosines = torch.stack([
            (mentions[..., :d] @ questions[:, :, None]).squeeze(-1),  # (B, M) question and the mention's own tokens
            (mentions[..., d : 2 * d] @ questions[:, :, None]).squeeze(-1),  # (B, M) question and the words before it
        ], dim=-1)  # (B, M, 2)
        query = self.query(self.drop(questions)).view(b, ops, ROLES, 1, self.rank)  # (B, OPS, R, 1, r)
        key = self.key(self.drop(mentions)).view(b, m, ROLES, self.rank).transpose(1, 2)  # (B, R, M, r)
        pair = (query * key[:, None]).sum(-1) / self.rank**0.5  # (B, OPS, R, M): what each operation wants of each mention
        pair = pair + self.similarity(cosines).transpose(1, 2)[:, None]  # (B, OPS, R, M)
        per_candidate = pair[torch.arange(b)[:, None], operations]  # (B, K, R, M): under each candidate's operation
        present = operands >= 0  # (B, K, O)
        index = operands.clamp(min=0)  # (B, K, O)
        first = torch.gather(per_candidate[:, :, 0], 2, index[..., :1]).squeeze(-1) * present[..., 0]  # (B, K); 0 for "zero"
        later = torch.gather(per_candidate[:, :, 1], 2, index[..., 1:])  # (B, K, O-1)
        later_present = present[..., 1:].float()
        later_mean = (later * later_present).sum(-1) / later_present.sum(-1).clamp(min=1)
        code = self.question_code(questions)[:, None].expand(b, k, QUESTION_CODE)
        layout = self.layout(torch.cat([features, code, nn.functional.one_hot(operations, ops).float()], dim=-1)).squeeze(-1)
        by_operation = self.operation(questions)
        if cues.shape[1]:
            by_operation = by_operation + cues @ self.cue_weights.T
        scores = first + later_mean + torch.gather(by_operation, 1, operations) + layout  # (B, K)
        if siblings is not None:
            scores = scores + (siblings * self.sibling[operations]).sum(-1)
        scores = scores.masked_fill(~valid, float("-inf"))
        return torch.cat([scores, self.write(questions)], dim=-1)


def operation_slices(start: int, stop: int, rank: int = RANK) -> dict[str, tuple[int, slice]]:
    """Where a chooser's parameters hold the forms of operations `start` to `stop` (exclusive):
    parameter name -> (the dimension that runs over operations, the slice of it they take)."""
    fixed = CANDIDATE_FEATURES + QUESTION_CODE
    per_role = ROLES * rank
    return {
        "query.weight": (0, slice(start * per_role, stop * per_role)),
        "query.bias": (0, slice(start * per_role, stop * per_role)),
        "operation.weight": (0, slice(start, stop)),
        "operation.bias": (0, slice(start, stop)),
        "layout.0.weight": (1, slice(fixed + start, fixed + stop)),
        "sibling": (0, slice(start, stop)),
        "cue_weights": (0, slice(start, stop)),
    }


def with_operations(state: dict[str, torch.Tensor], operations: int, rank: int = RANK) -> dict[str, torch.Tensor]:
    """A single chooser's state with forms for `operations` operations: those it lacks added as zeros
    (so it scores every candidate it could score before as before, and a new operation's by its
    layout alone until fitted), those beyond dropped."""
    had = state["operation.bias"].shape[0]
    out = dict(state)
    added = operation_slices(0, max(operations - had, 0), rank)
    for name, (dim, kept) in operation_slices(0, min(had, operations), rank).items():
        if name not in state:  # a part fitted before it existed: the loader gives it zeros of the right shape
            continue
        tensor = state[name]
        head = tensor.narrow(dim, 0, kept.stop)  # in `layout`, the columns before the forms come with them
        shape = list(tensor.shape)
        shape[dim] = added[name][1].stop - added[name][1].start
        out[name] = torch.cat([head, tensor.new_zeros(shape)], dim=dim)
    return out


def choice_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """-log of the probability on the right columns (every candidate equal to the gold value, or
    "write" when none is), averaged. logits, target: (B, K + 1); target True on right columns."""
    total = torch.logsumexp(logits, dim=-1)
    right = torch.logsumexp(logits.masked_fill(~target, float("-inf")), dim=-1)
    return (total - right).mean()
