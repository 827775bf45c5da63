"""Training the value chooser on generated groups, before (and apart from) the reader.

Every integer and date answer of a generated group is a mention of its document or one step over
mentions; the chooser learns which, from frozen question and mention vectors computed once per
document, so an epoch costs seconds. Where no candidate equals the gold value the right choice is
"write the digits".
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import msgspec
import torch
from torch import nn

from ..datasets.as_written import as_written_groups
from ..datasets.value_drills import drill_groups
from ..grounding.candidates import OPERATIONS
from ..grounding.mention import Mention
from ..grounding.mentions import find_mentions
from ..grounding.slot_candidates import is_grounded, slot_candidates
from ..reader.chooser_ensemble import ChooserEnsemble, chooser_count, read_cue
from ..reader.question_cues import question_cues, with_cues
from ..reader.value_chooser import (
    CANDIDATE_FEATURES, MAX_OPERANDS, CandidateTable, ValueChooser, choice_loss, mention_features,
    question_mention_features,
)
from ..retrieval.embedder import SpanEmbedder
from .config import CHOOSER_CUES
from .generated_fit import fit_on_generated, model_pointer, train_epochs
from ..types import AnswerSchema

BATCH = 64
WORD_DROP = 0.25  # the share of words a variant leaves out
CHOOSER_SEED = 7_000  # the chooser's generated groups: apart from the reader's epochs (seed * 1000 + epoch)


@dataclass
class ChoiceExample:
    """One integer or date question: its vector, its document's mentions, its candidates and the right columns."""

    question: torch.Tensor  # (D,)
    mentions: torch.Tensor  # (M, F)
    table: CandidateTable
    target: torch.Tensor  # (K + 1,) True on the right columns


def gold_value(schema: AnswerSchema, label):
    """The gold answer as a candidate value (int or date), or None when it is not one."""
    if schema.type == "integer":
        return label if isinstance(label, int) and not isinstance(label, bool) else None
    try:
        return dt.date.fromisoformat(label)
    except (TypeError, ValueError):
        return None


NEGATIONS = frozenset({"not", "no", "never", "none", "nor", "neither", "without", "unless", "except", "nothing", "only"})


def carries_meaning(word: str) -> bool:
    """Whether leaving `word` out could flip what a clause says: a negation, or a word with a digit
    (a date, an amount, a count)."""
    bare = word.strip(".,;:()[]\"'").lower()
    return bare in NEGATIONS or bare.endswith("n't") or any(ch.isdigit() for ch in word)


def reworded_document(text: str, mentions: Sequence[Mention], rng: random.Random, share: float = WORD_DROP) -> tuple[str, list[Mention]]:
    """`text` with each word left out at chance `share`, except the words of a value mention and
    those that carry meaning (`carries_meaning`), and the mentions moved to where they now stand.
    Line breaks stay, so sentences and lists keep their shape."""
    kept_at: list[tuple[int, int]] = []  # (old start, new start) per kept word
    spans = sorted((m.start, m.end) for m in mentions)
    starts = [a for a, _ in spans]
    first = re.match(r"\s*", text).end()
    pieces, length = [text[:first]], first
    for word in re.finditer(r"(\S+)(\s*)", text):
        a, b = word.start(1), word.end(1)
        k = bisect.bisect_left(starts, b)  # spans starting before the word ends
        in_mention = k > 0 and any(s < b and e > a for s, e in spans[max(0, k - 4) : k])
        if rng.random() >= share or in_mention or carries_meaning(word.group(1)):
            kept_at.append((a, length))
            pieces.append(word.group(0))
            length += len(word.group(0))
        elif "\n" in word.group(2):
            pieces.append("\n")
            length += 1
    new_text = "".join(pieces)
    old_starts = [a for a, _ in kept_at]

    def moved(offset: int) -> int:
        old, new = kept_at[bisect.bisect_right(old_starts, offset) - 1]
        return new + offset - old

    return new_text, [replace(m, start=moved(m.start), end=moved(m.end - 1) + 1) for m in mentions]


def drop_words(text: str, rng: random.Random, share: float = WORD_DROP, keep: Callable[[str], bool] | None = None) -> str:
    """`text` with each word left out at chance `share` (at least one word kept); words for which
    `keep` says so always stay (the draw is made all the same, so the others fall alike)."""
    words = text.split()
    kept = [w for w in words if rng.random() >= share or (keep is not None and keep(w))]
    return " ".join(kept or words[:1])


def reworded_vectors(
    embedder: SpanEmbedder, texts: Sequence[str], variants: int, rng: random.Random, keep: Callable[[str], bool] | None = None
) -> list[list[torch.Tensor]]:
    """Per text, the vectors of `variants` rewordings of it (`drop_words`, sparing what `keep` names),
    embedded in one pass."""
    if not variants:
        return [[] for _ in texts]
    vectors = embedder.embed([drop_words(t, rng, keep=keep) for t in texts for _ in range(variants)])
    return [list(vectors[i * variants : (i + 1) * variants]) for i in range(len(texts))]


def choice_examples(
    lines: Sequence[dict], embedder: SpanEmbedder, pointer=None, variants: int = 0, seed: int = 0,
    reword_documents: bool = False,
    counts: bool = True,
) -> list[ChoiceExample]:
    """Examples from labelled request lines: one per integer or date question with a label (its
    candidates with counts of listed percentages where `counts`, as `slot_candidates`); with
    `pointer` (a context with `question_evidence`), each question's mentions carry where it points.
    With `variants`, each question also comes that many more times, read with some of its words left
    out (`drop_words`), so the chooser meets wordings the generator's few paraphrases never use; with
    `reword_documents`, each copy also reads its mentions in a rewording of the document of its own
    (`reworded_document`)."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        labels = line.get("labels") or {}
        asked = []
        for q in line["questions"]:
            schema = msgspec.convert(q["schema"], AnswerSchema)
            if is_grounded(schema) and q["id"] in labels:
                asked.append((q["text"], schema, gold_value(schema, labels[q["id"]])))
        if not asked:
            continue
        text = line["document"]["text"]
        mentions = find_mentions(text)
        features = mention_features(embedder, text, mentions)
        texts = [t for t, _, _ in asked]
        cues = question_cues(texts)
        vectors = with_cues(embedder.embed_questions(texts), cues)
        reworded = [[with_cues(v, cue) for v in copies] for copies, cue in zip(reworded_vectors(embedder, texts, variants, rng), cues)]
        copies = [reworded_mention_features(embedder, text, mentions, features, rng) for _ in range(variants)] if reword_documents else []
        looked = pointer.question_evidence(text, texts) if pointer is not None else [None] * len(asked)
        for i, (vector, evidence, (_, schema, gold)) in enumerate(zip(vectors, looked, asked)):
            candidates = slot_candidates(schema, mentions, counts)
            right = [gold is not None and type(c.value) is type(gold) and c.value == gold for c in candidates]
            target = torch.tensor([*right, not any(right)], dtype=torch.bool)
            seen = question_mention_features(features, mentions, evidence)
            table = CandidateTable.of(candidates, mentions)
            out.append(ChoiceExample(vector, seen, table, target))
            read = [question_mention_features(copy, mentions, evidence) for copy in copies] or [seen] * variants
            out.extend(ChoiceExample(v.clone(), r, table, target) for v, r in zip(reworded[i], read))
    return out


def reworded_mention_features(embedder: SpanEmbedder, text: str, mentions: Sequence[Mention], features: torch.Tensor, rng: random.Random) -> torch.Tensor:
    """The document's mention features with each mention's vectors read in a rewording of the
    document (`reworded_document`); what a mention is and where it stands among the values stay."""
    if not mentions:
        return features
    new_text, moved = reworded_document(text, mentions, rng)
    vectors = embedder.embed_mentions(new_text, moved)
    return torch.cat([vectors, features[:, vectors.shape[1] :]], dim=1)


def collate(examples: Sequence[ChoiceExample]) -> tuple[torch.Tensor, ...]:
    """Padded (questions, mentions, operations, operands, features, valid, target) of a batch."""
    b = len(examples)
    m = max(1, max(e.mentions.shape[0] for e in examples))
    k = max(1, max(len(e.table.operations) for e in examples))
    mentions = torch.zeros((b, m, examples[0].mentions.shape[1]))
    operations = torch.zeros((b, k), dtype=torch.long)
    operands = torch.full((b, k, MAX_OPERANDS), -1, dtype=torch.long)
    features = torch.zeros((b, k, CANDIDATE_FEATURES))
    valid = torch.zeros((b, k), dtype=torch.bool)
    target = torch.zeros((b, k + 1), dtype=torch.bool)
    for i, e in enumerate(examples):
        n = len(e.table.operations)
        mentions[i, : e.mentions.shape[0]] = e.mentions
        operations[i, :n] = e.table.operations
        operands[i, :n] = e.table.operands
        features[i, :n] = e.table.features
        valid[i, :n] = True
        target[i, :n] = e.target[:n]
        target[i, k] = e.target[n]  # "write" is always the last column
    questions = torch.stack([e.question for e in examples])
    return questions, mentions, operations, operands, features, valid, target


def choice_accuracy(chooser: nn.Module, examples: Sequence[ChoiceExample]) -> dict[str, float]:
    """Share of examples whose best column is right; and among those a candidate can answer."""
    right = reachable = right_reachable = 0
    training = chooser.training
    chooser.eval()
    with torch.no_grad():
        for first in range(0, len(examples), BATCH):
            batch = examples[first : first + BATCH]
            *inputs, target = collate(batch)
            best = chooser(*inputs).argmax(dim=-1)
            hit = target[torch.arange(len(batch)), best]
            can = ~target[:, -1]
            right += int(hit.sum())
            reachable += int(can.sum())
            right_reachable += int((hit & can).sum())
    chooser.train(training)
    return {
        "accuracy": right / max(len(examples), 1),
        "reachable": reachable / max(len(examples), 1),
        "accuracy_where_reachable": right_reachable / max(reachable, 1),
    }


def train_chooser(
    chooser: ValueChooser,
    examples: Sequence[ChoiceExample],
    epochs: int,
    seed: int = 0,
    learning_rate: float = 2e-3,
    weight_decay: float = 1e-2,
    log: Callable[[str], None] = print,
) -> dict:
    """Fit the chooser to the examples; returns its accuracy on them before and after."""
    return train_epochs(
        chooser, examples, epochs, seed, what="chooser", loss_of=_batch_loss, accuracy=choice_accuracy,
        batch=BATCH, learning_rate=learning_rate, weight_decay=weight_decay, log=log,
    )


def _batch_loss(chooser: ValueChooser, examples: Sequence[ChoiceExample]) -> torch.Tensor:
    *inputs, target = collate(examples)
    return choice_loss(chooser(*inputs), target)


def train_choosers(
    chooser: nn.Module, examples: Sequence[ChoiceExample], epochs: int, seed: int = 0, log: Callable[[str], None] = print,
    weight_decay: float = 1e-2,
) -> dict:
    """`train_chooser` for a chooser, or for each member of an ensemble in turn (`reader.chooser_ensemble`),
    then the ensemble's accuracy on the examples before and after."""
    if not isinstance(chooser, ChooserEnsemble):
        return train_chooser(chooser, examples, epochs, seed, log=log, weight_decay=weight_decay)
    before = choice_accuracy(chooser, examples)
    members = []
    for i, member in enumerate(chooser.members):
        log(f"ensemble member {i + 1}/{len(chooser.members)} (the cue {'around' if member.around_cue > 0.5 else 'before'})")
        members.append(train_chooser(member, examples, epochs, seed, log=log, weight_decay=weight_decay))
    after = choice_accuracy(chooser, examples)
    log(f"ensemble accuracy on its training questions: {before['accuracy']:.3f} -> {after['accuracy']:.3f}")
    return {"examples": len(examples), "epochs": epochs, "before": before, "after": after, "members": members}


def fit_value_chooser(
    chooser: nn.Module,
    groups: int,
    epochs: int,
    seed: int,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    pointer=None,
    question_variants: int = 0,
    reword_documents: bool = False,
    weight_decay: float = 1e-2,
    drills: int = 0,
    as_written: int = 0,
) -> dict:
    """Train `chooser` on the integer and date questions of `groups` generated training groups (and of
    `drills` value drills, `datasets/value_drills.py`, and of the first `as_written` of those groups asked
    values as their documents write them, `datasets/as_written.py`), then
    freeze it; returns what the fit measured, with its accuracy on the `held_out` labelled request
    lines where there are any. `pointer` is the model's pointed context (`retrieval/pointed.py`), or
    None for a model without a span pointer. `question_variants`: more copies of each training
    question with words left out, each reading a rewording of its document with `reword_documents`
    (`choice_examples`)."""
    fitted = fit_on_generated(
        chooser, what="integer and date questions", groups=groups, epochs=epochs, seed=seed,
        first_seed=CHOOSER_SEED, examples_of=choice_examples,
        train=functools.partial(train_choosers, weight_decay=weight_decay), accuracy=choice_accuracy,
        log=log, held_out=held_out, pointer=pointer,
        training_examples_of=functools.partial(
            choice_examples, variants=question_variants, seed=seed, reword_documents=reword_documents
        ),
        extra_lines=drill_groups(drills, seed=CHOOSER_SEED + seed) + as_written_groups(as_written, CHOOSER_SEED + seed),
    )
    fitted = with_rewording(fitted, question_variants, reword_documents)
    if as_written:
        fitted["as_written"] = as_written
    return {**fitted, "drills": drills} if drills else fitted


def with_rewording(fitted: dict, question_variants: int, reword_documents: bool) -> dict:
    """A fit's record with how its training questions were reworded, where they were."""
    if reword_documents:
        fitted = {**fitted, "reword_documents": True}
    return {**fitted, "question_variants": question_variants, "word_drop": WORD_DROP} if question_variants else fitted


def add_value_chooser(
    folder: Path,
    out: Path,
    groups: int,
    epochs: int,
    seed: int = 0,
    log: Callable[[str], None] = print,
    held_out: Sequence[dict] = (),
    question_variants: int = 0,
    cue: str = "both",
    reword_documents: bool = False,
    int8_parts: Sequence[str] = (),
    drills: int = 0,
    as_written: int = 0,
    generic_below: float | None = None,
    mentions_in_spans: bool = False,
) -> dict:
    """A copy of the checkpoint in `folder`, written to `out`, with a value chooser fitted beside its
    unchanged reader (`int8_parts` stored in int8 from now on); returns the fit's summary (with
    `held_out` accuracy where lines are given).
    `cue`: which words say what a mention is, "before" it or "around" it (`reader.value_chooser.cue_view`),
    or "both": two choosers, one per cue, whose probabilities are averaged (`reader.chooser_ensemble`).
    With `generic_below`, the checkpoint's value choosers stay and generic ones are fitted beside them,
    answering the slots where the value choosers' top probability is under it (`reader/fallback_chooser.py`).
    `mentions_in_spans`: the new choosers read each mention in the span the pointer embeds (the model's
    other readers of mentions, its comparison chooser, then need fitting again)."""
    if cue not in CHOOSER_CUES:
        raise ValueError(f"cue must be one of {', '.join(CHOOSER_CUES)}, not {cue!r}")
    if generic_below is not None and not 0.0 < generic_below <= 1.0:
        raise ValueError(f"--generic-below must be above 0 and at most 1, not {generic_below}")
    from dataclasses import replace

    from ..model.loader import ModelLoadError, checkpoint_config, load_checkpoint, save_refitted, store_in_int8

    saved, meta = checkpoint_config(folder)
    if mentions_in_spans and not saved.points_at_spans:
        raise ModelLoadError(f"{folder} has no span pointer, so no spans to read mentions in; leave out --mentions-in-spans")
    if mentions_in_spans and saved.compares_values and not saved.mentions_in_spans:
        log("the comparison chooser was fitted on mentions read in windows of their own; "
            "fit it again with `decision-engine fit-comparer` onto this checkpoint")
    saved = replace(saved, mentions_in_spans=saved.mentions_in_spans or mentions_in_spans)
    if generic_below is not None:
        if not saved.chooses_values:
            raise ModelLoadError(
                f"{folder} has no value choosers to stand beside; fit them first with `decision-engine fit-chooser`"
            )
        part = "generic_chooser"
        cfg = replace(saved, generic_choosers=chooser_count(cue), generic_below=generic_below)
        model, meta = load_checkpoint(folder, cfg=cfg, fresh_generic=True)
    else:
        part = "value_chooser"
        cfg = replace(saved, chooses_values=True, value_choosers=chooser_count(cue), chooser_operations=len(OPERATIONS))
        try:
            model, meta = load_checkpoint(folder, cfg=cfg, fresh_chooser=True)
        except ModelLoadError:  # a comparison chooser of another layout: it goes, to be fitted again
            model, meta = load_checkpoint(folder, cfg=replace(cfg, compares_values=False), fresh_chooser=True)
            log("the checkpoint's comparison chooser has a layout this version does not read and is left out; "
                "fit a new one with `decision-engine fit-comparer`")
    store_in_int8(model, meta, folder, int8_parts)
    chooser = getattr(model, part)
    read_cue(chooser, cue)
    fitted = fit_value_chooser(
        chooser, groups, epochs, seed, log, held_out, model_pointer(model), question_variants, reword_documents,
        drills=drills, as_written=as_written,
    )
    fitted["cue"] = cue
    if generic_below is not None:
        fitted["below"] = generic_below
    save_refitted(model, meta, out, folder, part, fitted)
    return fitted
