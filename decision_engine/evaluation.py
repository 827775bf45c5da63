"""Accuracy of a model over labelled requests, per mode: questions, whole groups, validity, speed."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from .decoding.layout import Layout
from .engine import DecisionEngine
from .errors import RequestError
from .kinds import same_answer
from .metrics import (
    ece_bootstrap_interval,
    expected_calibration_error,
    group_bootstrap_interval,
    grounding_reachable,
    overlaps,
)
from .retrieval.coverage import covers
from .rules import RuleSet
from .types import Answer, AnswerSchema, DecisionResponse, Question
from .validation import request_from_object
from .values import kind, value_problem


@dataclass
class LabelledGroup:
    request_line: dict[str, Any]  # samples format: the request plus "labels" (and "evidence" when known)
    labels: dict[str, Any]
    evidence: dict[str, list[tuple[int, int]]] = field(default_factory=dict)


def load_groups(path: Path, fmt: str, split: str = "all", group_size: int = 8, seed: int = 0) -> list[LabelledGroup]:
    """Labelled groups from a samples-format JSON Lines file or a ContractNLI JSON file."""
    if fmt == "contractnli":
        from .datasets.contractnli import load_contractnli, split_documents, to_requests

        docs, hypotheses = load_contractnli(path)
        if split != "all":
            train, validation = split_documents(docs, seed=seed)
            docs = validation if split == "validation" else train
        lines = [line for doc in docs for line in to_requests(doc, hypotheses, group_size=group_size)]
    else:
        lines = [msgspec.json.decode(raw) for raw in path.read_bytes().splitlines() if raw.strip()]
    return labelled_groups(lines)


def labelled_groups(lines: Iterable[dict]) -> list[LabelledGroup]:
    """The request lines that carry labels, as labelled groups with their gold evidence."""
    groups = []
    for line in lines:
        if "labels" not in line:
            continue
        evidence = {k: [tuple(r) for r in v] for k, v in (line.get("evidence") or {}).items()}
        groups.append(LabelledGroup(line, line["labels"], evidence))
    return groups


def _f1(pairs: list[tuple[AnswerSchema, Any, Any]], label: Any) -> float:
    """F1 of answering `label`, over (schema, gold, predicted) triples compared by `same_answer`."""
    hits = [(same_answer(schema, gold, label), same_answer(schema, pred, label)) for schema, gold, pred in pairs]
    tp = sum(1 for gold, pred in hits if gold and pred)
    fp = sum(1 for gold, pred in hits if not gold and pred)
    fn = sum(1 for gold, pred in hits if gold and not pred)
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def swap_documents(groups: Sequence[LabelledGroup]) -> list[LabelledGroup]:
    """The same questions and labels, each group asked of the next different document (a control: what
    accuracy is left when the model reads the wrong contract). Gold evidence no longer applies and is dropped."""
    documents: dict[str, dict[str, Any]] = {}
    for g in groups:
        documents.setdefault(g.request_line["document"]["text"], g.request_line["document"])
    if len(documents) < 2:
        raise ValueError("swapping documents needs groups over at least two different documents")
    texts = list(documents)
    following = {text: documents[texts[(i + 1) % len(texts)]] for i, text in enumerate(texts)}
    swapped = []
    for g in groups:
        line = {**g.request_line, "document": following[g.request_line["document"]["text"]], "evidence": {}}
        swapped.append(LabelledGroup(line, g.labels))
    return swapped


def with_swap_drop(swapped: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    """The metrics of groups asked of swapped documents (`swapped`), with the accuracies of the same
    groups asked of their own documents (`own`) and the drops: what the model owes to reading the
    right document."""
    return {
        **swapped,
        "own_documents": {key: own[key] for key in ("per_question_accuracy", "group_accuracy")},
        "swap_drop": own["per_question_accuracy"] - swapped["per_question_accuracy"],
        "swap_group_drop": own["group_accuracy"] - swapped["group_accuracy"],
    }


def majority_answers(label_sets: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Each question id's most common answer over `label_sets`; ties go to the smallest answer in JSON
    order, so the order of the input never matters (True and 1 stay apart)."""
    counts: dict[str, Counter] = {}
    for labels in label_sets:
        for qid, value in labels.items():
            counts.setdefault(qid, Counter())[msgspec.json.encode(value)] += 1
    return {qid: msgspec.json.decode(min(c, key=lambda key: (-c[key], key))) for qid, c in counts.items()}


def _schemas(line: Mapping[str, Any]) -> dict[str, AnswerSchema]:
    """The answer schema of each question of a samples line whose schema reads, to compare answers by."""
    schemas = {}
    for question in line.get("questions") or []:
        try:
            schemas[question["id"]] = msgspec.convert(question["schema"], AnswerSchema)
        except (msgspec.ValidationError, KeyError, TypeError):
            continue
    return schemas


def prior_accuracy(groups: Sequence[LabelledGroup], priors: Mapping[str, Any]) -> dict[str, float]:
    """Accuracy per question and per group of answering each question id with its `priors` value, asking
    nothing of the document: the yardstick a model that reads must beat."""
    asked = right = groups_right = 0
    for g in groups:
        schemas = _schemas(g.request_line)
        hits = [same_answer(schemas.get(qid), priors.get(qid), label) for qid, label in g.labels.items()]
        asked += len(hits)
        right += sum(hits)
        groups_right += all(hits)
    return {
        "prior_accuracy": right / asked if asked else 0.0,
        "prior_group_accuracy": groups_right / len(groups) if groups else 0.0,
    }


def answer_row(mode: str, group: LabelledGroup, question: Question, answer: Answer | None, right: bool) -> dict[str, Any]:
    """One question's outcome, as `eval --answers` writes it: its group and id, its kind, the label and
    the answer (None where the engine failed), whether they agree, the answer's confidence, what fixed
    it, and the first evidence span it names."""
    first = answer.evidence[0] if answer is not None and answer.evidence else None
    return {
        "mode": mode,
        "group": group.request_line.get("id"),
        "question": question.id,
        "type": kind(question.schema),
        "label": group.labels.get(question.id),
        "answer": answer.value if answer is not None else None,
        "right": bool(right),
        "confidence": answer.confidence if answer is not None else None,
        "fixed_by": answer.fixed_by if answer is not None else None,
        "evidence": {"start": first.start, "end": first.end, "text": first.text} if first is not None else None,
    }


def evaluate(
    engine: DecisionEngine,
    groups: Sequence[LabelledGroup],
    mode: str,
    batch_size: int = 8,
    f1_labels: Sequence[str] = (),
    priors: Mapping[str, Any] | None = None,
    answers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Metrics of one mode over labelled groups; with `priors` (question id -> a fixed answer, such as
    its most common training label) also that yardstick's accuracy and how often the model agrees with it.
    With `answers`, one row per question asked is appended to it (`answer_row`): what was answered and
    whether it was right."""
    invalid = violations = steps = passes = 0
    evidence_hit = evidence_total = 0
    first_hit = first_total = 0  # answers with gold evidence, and those whose first evidence span overlaps it
    chosen: list[list[tuple[float, bool]]] = []  # per decided group, (confidence, right) of each answer the model chose
    grounded = [0, 0, 0]  # integer and date answers: asked, reachable from the document's mentions, right among those
    pairs: list[tuple[AnswerSchema, Any, Any]] = []  # (schema, gold, predicted)
    agree_prior = 0
    by_type: dict[str, list[int]] = {}  # answer type -> [right, asked]
    by_question: dict[str, list[int]] = {}  # question id -> [right, asked, the yardstick right]
    per_group: list[tuple[int, int]] = []  # (right, asked) of each decided group
    elapsed = 0.0
    skipped = 0
    for start in range(0, len(groups), batch_size):
        chunk = groups[start : start + batch_size]
        requests, kept = [], []
        for g in chunk:
            try:
                requests.append(request_from_object(g.request_line))
                kept.append(g)
            except RequestError:
                skipped += 1
        began = time.perf_counter()
        laid_out = engine.lay_out_many(requests, mode)  # kept for evidence recall: what each block shows
        outcomes = engine.decide_laid_out(laid_out)
        elapsed += time.perf_counter() - began
        for g, request, layout, response in zip(kept, requests, laid_out, outcomes):
            if isinstance(layout, RequestError):  # a group this model cannot take (its window is too small)
                skipped += 1
                continue
            ids = [q.id for q in request.questions]
            if isinstance(layout, Layout):
                for qid, shown in zip(ids, layout.shown_ranges):  # only what the question's own block sees
                    for gold_range in g.evidence.get(qid, []):
                        evidence_total += 1
                        evidence_hit += covers(shown, gold_range)
            if not isinstance(response, DecisionResponse):  # an engine failure: every answer counts invalid
                invalid += len(ids)
                per_group.append((0, len(ids)))
                for q in request.questions:
                    by_type.setdefault(kind(q.schema), [0, 0])[1] += 1
                    if answers is not None:
                        answers.append(answer_row(mode, g, q, None, False))
                continue
            steps += response.steps
            passes += response.passes
            values = [a.value for a in response.answers]
            invalid += sum(value_problem(q.schema, v) is not None for q, v in zip(request.questions, values))
            rules = RuleSet.compile([q.schema for q in request.questions], ids, request.rules)
            violations += len(rules.violations(values))
            given = list(zip(request.questions, values))
            right = [same_answer(q.schema, v, g.labels.get(q.id)) for q, v in given]
            pairs.extend((q.schema, g.labels.get(q.id), v) for q, v in given)
            if priors is not None:
                agree_prior += sum(same_answer(q.schema, priors.get(q.id), v) for q, v in given)
            chosen.append([])
            for q, answer, ok in zip(request.questions, response.answers, right):
                if answers is not None:
                    answers.append(answer_row(mode, g, q, answer, ok))
                if answer.fixed_by == "model":
                    chosen[-1].append((answer.confidence, ok))
                golds = g.evidence.get(q.id)
                if golds:
                    first_total += 1
                    first_hit += bool(answer.evidence) and overlaps((answer.evidence[0].start, answer.evidence[0].end), golds)
                reachable = grounding_reachable(request.document.text, q.schema, g.labels.get(q.id))
                if reachable is not None:
                    grounded[0] += 1
                    grounded[1] += reachable
                    grounded[2] += reachable and ok
            for q, ok in zip(request.questions, right):
                tally = by_type.setdefault(kind(q.schema), [0, 0])
                tally[0] += ok
                tally[1] += 1
                asked = by_question.setdefault(q.id, [0, 0, 0])
                asked[0] += ok
                asked[1] += 1
                if priors is not None:
                    asked[2] += same_answer(q.schema, priors.get(q.id), g.labels.get(q.id))
            per_group.append((sum(right), len(ids)))
    decided = len(groups) - skipped
    correct = sum(r for r, _ in per_group)
    answered = sum(a for _, a in per_group)
    groups_right = sum(r == a for r, a in per_group)
    metrics: dict[str, Any] = {
        "per_question_accuracy": correct / answered if answered else 0.0,
        "group_accuracy": groups_right / decided if decided else 0.0,
        "invalid": invalid,
        "rule_violations": violations,
        "questions": answered,
        "groups": decided,
        "skipped_groups": skipped,
        "decisions_per_s": decided / elapsed if elapsed else 0.0,
        "questions_per_s": answered / elapsed if elapsed else 0.0,
        "mean_steps": steps / decided if decided else 0.0,
        "mean_passes": passes / decided if decided else 0.0,  # steps that needed a forward pass
        "accuracy_by_type": {t: right / asked for t, (right, asked) in sorted(by_type.items())},
        "questions_by_type": {t: asked for t, (_, asked) in sorted(by_type.items())},
    }
    # 95% intervals from resampling whole groups: how far a figure could move on another draw of this size.
    metrics["per_question_accuracy_ci95"] = list(group_bootstrap_interval(per_group))
    metrics["group_accuracy_ci95"] = list(group_bootstrap_interval([(int(r == a), 1) for r, a in per_group]))
    # Per question id (JSON only): where a set's points are won and lost, beside the yardstick's.
    metrics["accuracy_by_question"] = {q: right / asked for q, (right, asked, _) in sorted(by_question.items())}
    metrics["questions_by_question"] = {q: asked for q, (_, asked, _) in sorted(by_question.items())}
    if priors is not None:
        metrics["prior_accuracy_by_question"] = {q: hit / asked for q, (_, asked, hit) in sorted(by_question.items())}
    answers = [pair for group in chosen for pair in group]
    metrics["ece"] = expected_calibration_error([c for c, _ in answers], [ok for _, ok in answers])
    metrics["ece_ci95"] = list(ece_bootstrap_interval(chosen))
    if evidence_total:
        metrics["evidence_recall"] = evidence_hit / evidence_total
    if first_total:
        metrics["evidence_hit_at_1"] = first_hit / first_total
    if grounded[0]:
        metrics["grounding_coverage"] = grounded[1] / grounded[0]
        metrics["grounded_accuracy"] = grounded[2] / grounded[1] if grounded[1] else 0.0
    if priors is not None:
        metrics.update(prior_accuracy(groups, priors))
        metrics["agrees_with_prior"] = agree_prior / answered if answered else 0.0
    for label in f1_labels:
        metrics[f"f1_{label.replace(' ', '_')}"] = _f1(pairs, label)
    return metrics
