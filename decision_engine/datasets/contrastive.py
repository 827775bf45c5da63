"""Contrastive ContractNLI copies: a document with some hypotheses' gold evidence cut out.

In the copy those hypotheses are "not mentioned", while every other label stands (its evidence is
kept whole). The original and its copy are near-identical documents with different answers to
the same question, so a hypothesis's usual answer alone cannot lower the loss: only reading can.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Sequence

from .contractnli import NliDocument

NOT_MENTIONED = "not mentioned"
CUT_SHARE = 0.5  # of a document's evidenced hypotheses, the share whose evidence a copy cuts out


def _overlaps(a: tuple[int, int], ranges: Sequence[tuple[int, int]]) -> bool:
    return any(min(a[1], b[1]) > max(a[0], b[0]) for b in ranges)


def _merged(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def evidence_removed(doc: NliDocument, rng: random.Random, share: float = CUT_SHARE) -> NliDocument | None:
    """A copy of `doc` with the gold evidence of some entailed or contradicted hypotheses cut out and
    those hypotheses relabelled "not mentioned"; None when no hypothesis's evidence can be cut without
    cutting into another's."""
    evidenced = sorted(k for k in doc.labels if doc.labels[k] != NOT_MENTIONED and doc.evidence.get(k))
    if not evidenced:
        return None
    picked = set(rng.sample(evidenced, max(1, round(len(evidenced) * share))))
    kept = [r for k in evidenced if k not in picked for r in doc.evidence[k]]
    cut_keys = sorted(k for k in picked if not any(_overlaps(r, kept) for r in doc.evidence[k]))
    if not cut_keys:
        return None
    cuts = _merged([r for k in cut_keys for r in doc.evidence[k]])
    starts = [s for s, _ in cuts]
    removed_before = [0]
    for s, e in cuts:
        removed_before.append(removed_before[-1] + e - s)

    def moved(offset: int) -> int:
        """Where a character offset outside every cut lands in the copy."""
        i = bisect.bisect_right(starts, offset)
        return offset - removed_before[i]

    pieces, last = [], 0
    for s, e in cuts:
        pieces.append(doc.text[last:s])
        last = e
    pieces.append(doc.text[last:])
    spans = [(moved(s), moved(e)) for s, e in doc.spans if not _overlaps((s, e), cuts)]
    labels = {k: (NOT_MENTIONED if k in cut_keys else v) for k, v in doc.labels.items()}
    evidence = {
        k: [(moved(s), moved(e)) for s, e in ranges] for k, ranges in doc.evidence.items() if k not in cut_keys
    }
    return NliDocument(f"{doc.id}-cut", "".join(pieces), spans, labels, evidence)
