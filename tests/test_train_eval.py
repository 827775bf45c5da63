"""`decision-engine train` (smoke config) and `decision-engine eval` end to end on the CPU."""

from __future__ import annotations

import json
import random
import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from decision_engine.cli import main
from decision_engine.datasets.linked_groups import generate_groups
from decision_engine.model.loader import load_checkpoint, save_checkpoint
from decision_engine.training.config import TrainConfig
from decision_engine.training.objective import masked_diffusion_loss
from contractnli_files import write_contractnli

SAMPLES = Path(__file__).resolve().parents[1] / "samples"
EVAL_FIELDS = {"per_question_accuracy", "group_accuracy", "invalid", "rule_violations", "questions", "groups", "decisions_per_s"}


@pytest.fixture(scope="module")
def smoke_checkpoint(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("smoke")
    assert main(["train", "--config", "smoke", "--out", str(out), "--retrieval", "leading"]) == 0
    return out


def test_smoke_training_saves_a_loadable_checkpoint(smoke_checkpoint):
    model, meta = load_checkpoint(smoke_checkpoint)
    assert meta["name"] == "decision-model-smoke"
    assert meta["training"]["steps"] == 3
    assert meta["train_config"]["max_steps"] == 3
    assert model.cfg.hidden == 64


def test_training_continues_from_a_checkpoint(smoke_checkpoint, tmp_path):
    """`init_from` starts from saved weights (not a fresh model), and `first_epoch` draws other groups."""
    model, meta = load_checkpoint(smoke_checkpoint)
    with torch.no_grad():
        model.head_bias.add_(5.0)  # a mark no fresh model carries
    marked = tmp_path / "marked"
    fitted_after = {"absence_gate": {"weight": 1.5}, "calibration": {"joint:boolean": [1.0, 0.0]}}
    save_checkpoint(
        model, marked, meta["name"],
        extra={"context_tokens": meta.get("context_tokens"), "training": {"steps": 3}, **fitted_after},
    )
    config = tmp_path / "continued.json"
    settings = TrainConfig.load("smoke").to_dict() | {"init_from": str(marked), "first_epoch": 5, "max_steps": 1}
    config.write_text(json.dumps(settings))
    out = tmp_path / "continued"
    assert main(["train", "--config", str(config), "--out", str(out), "--retrieval", "leading"]) == 0
    after, after_meta = load_checkpoint(out)
    assert after_meta["train_config"]["init_from"] == str(marked)
    assert torch.allclose(after.head_bias, model.head_bias, atol=0.1)
    # what was fitted after the first run's training carries over, and that run's record with it
    assert {k: after_meta[k] for k in fitted_after} == fitted_after
    assert after_meta["continued"]["from"] == str(marked) and after_meta["continued"]["training"] == {"steps": 3}
    assert after_meta["training"]["steps"] == 1


def test_a_continued_run_can_lengthen_the_window(smoke_checkpoint, tmp_path):
    """A larger `max_positions` than the checkpoint's interpolates its trained position embeddings."""
    before, _ = load_checkpoint(smoke_checkpoint)
    config = tmp_path / "longer.json"
    settings = TrainConfig.load("smoke").to_dict() | {
        "init_from": str(smoke_checkpoint), "max_positions": 640, "context_tokens": 400, "max_steps": 1,
    }
    config.write_text(json.dumps(settings))
    out = tmp_path / "longer"
    assert main(["train", "--config", str(config), "--out", str(out), "--retrieval", "leading"]) == 0
    after, meta = load_checkpoint(out)
    assert meta["config"]["max_positions"] == 640 and meta["context_tokens"] == 400
    old, new = before.embed.position.weight, after.embed.position.weight
    assert new.shape == (640, old.shape[1])
    assert torch.allclose(new[0], old[0], atol=0.05)  # the ends stay where they were (one step of training moved them a little)
    assert torch.allclose(new[-1], old[-1], atol=0.05)


def _smoke_batch(count: int):
    """A smoke model and one batch of `count` generated training groups laid out as joint blocks."""
    from decision_engine.backends.native import NativeBackend, base_tokenizer
    from decision_engine.backends.vocabulary import Vocabulary
    from decision_engine.engine import DecisionEngine
    from decision_engine.training.examples import examples_from_line
    from decision_engine.training.loop import build_model
    from decision_engine.training.objective import batch_tensors

    cfg = TrainConfig.load("smoke")
    vocab = Vocabulary.from_tokenizer(base_tokenizer())
    model = build_model(cfg)
    backend = NativeBackend(model, vocab, "t")
    backend.context_tokens = cfg.context_tokens
    engine = DecisionEngine(backend)
    lines = generate_groups("train", count, seed=1)
    examples = [e for line in lines for e in examples_from_line(engine.prepare, line, "joint")]
    assert len(examples) == count
    return model, vocab, examples, batch_tensors(examples, vocab.pad_id, "cpu")


@pytest.mark.parametrize("constrained", [False, True])
def test_training_lowers_the_loss_on_a_fixed_batch(constrained):
    """A few optimiser steps on one batch must reduce its loss (the objective trains something)."""
    model, vocab, _, batch = _smoke_batch(4)
    optimiser = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    model.train()
    for _ in range(12):
        generator = torch.Generator().manual_seed(0)
        loss = masked_diffusion_loss(model, batch, vocab.mask_id, generator, constrained=constrained)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.7, losses


def test_constrained_loss_is_the_full_softmax_renormalised_over_allowed_tokens():
    """Each position's constrained loss equals -log of the gold token's full-vocabulary probability
    renormalised over exactly the tokens its schema allows (and those tokens include the gold one)."""
    model, vocab, examples, batch = _smoke_batch(3)
    model.eval()
    with torch.no_grad():
        full = model(batch["prefix_ids"], batch["prefix_slots"], batch["prefix_mask"], batch["gold"], batch["block_slots"])
        columns = model(
            batch["prefix_ids"], batch["prefix_slots"], batch["prefix_mask"], batch["gold"], batch["block_slots"],
            batch["columns"],
        )
    assert torch.allclose(full[:, :, batch["columns"]], columns, atol=1e-5)
    for i, example in enumerate(examples):
        for j, (gold, options) in enumerate(zip(example.gold, example.allowed)):
            assert gold in options
            chosen = [batch["columns"][c].item() for c in torch.nonzero(batch["allowed"][i, j]).flatten()]
            assert sorted(chosen) == sorted(options)
            assert batch["columns"][batch["gold_column"][i, j]].item() == gold
            expected = torch.log_softmax(full[i, j, options], dim=0)[options.index(gold)]
            got = torch.log_softmax(columns[i, j].masked_fill(~batch["allowed"][i, j], float("-inf")), dim=0)
            assert torch.isclose(got[batch["gold_column"][i, j]], expected, atol=1e-4)


def test_a_stage_without_its_previous_stage_is_a_clear_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no runs/cpu-summary-more here
    stage6 = Path(__file__).resolve().parents[1] / "experiments" / "cpu-stage6.json"
    assert main(["train", "--config", str(stage6)]) == 2
    assert "init_from runs/cpu-summary-more: no checkpoint there" in capsys.readouterr().err


def test_unknown_config_is_a_clear_error(capsys):
    assert main(["train", "--config", "no-such-preset"]) == 2
    assert "unknown config" in capsys.readouterr().err


def test_eval_jsonl_reports_every_mode(smoke_checkpoint, capsys):
    path = SAMPLES / "lease_termination.jsonl"
    code = main(["eval", "--path", str(path), "--model", str(smoke_checkpoint), "--json", "--retrieval", "leading"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"joint", "independent", "sequential"}
    for metrics in report.values():
        assert EVAL_FIELDS <= set(metrics)
        assert metrics["groups"] == 2 and metrics["questions"] == 14
        assert metrics["invalid"] == 0 and metrics["rule_violations"] == 0
        assert 0.0 <= metrics["per_question_accuracy"] <= 1.0
        for figure in ("per_question_accuracy", "group_accuracy"):
            low, high = metrics[f"{figure}_ci95"]
            assert low <= metrics[figure] <= high


def test_eval_answers_writes_each_questions_outcome_per_mode(smoke_checkpoint, tmp_path, capsys):
    path = SAMPLES / "lease_termination.jsonl"
    out = tmp_path / "answers.jsonl"
    args = ["eval", "--path", str(path), "--model", str(smoke_checkpoint), "--modes", "joint,independent", "--json",
            "--retrieval", "leading", "--answers", str(out)]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    asked = [(line["id"], q["id"]) for line in lines for q in line["questions"]]
    for mode in ("joint", "independent"):
        mine = [row for row in rows if row["mode"] == mode]
        assert [(row["group"], row["question"]) for row in mine] == asked
        assert sum(row["right"] for row in mine) == round(report[mode]["per_question_accuracy"] * len(asked))
        for row, (group, question) in zip(mine, asked):
            line = next(each for each in lines if each["id"] == group)
            assert row["label"] == line["labels"][question]
            assert row["type"] in {"boolean", "enum", "integer", "date"} and 0.0 <= row["confidence"] <= 1.0
            assert set(row) == {"mode", "group", "question", "type", "label", "answer", "right", "confidence",
                                "fixed_by", "evidence"}


def test_eval_answers_to_a_missing_folder_is_refused_before_any_work(tmp_path, capsys):
    path = SAMPLES / "lease_termination.jsonl"
    assert main(["eval", "--path", str(path), "--answers", str(tmp_path / "nowhere" / "a.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--answers" in err and "no such folder" in err and "Traceback" not in err


def test_eval_generated_validation_groups(smoke_checkpoint, tmp_path, capsys):
    path = tmp_path / "groups.jsonl"
    path.write_text("".join(json.dumps(g) + "\n" for g in generate_groups("validation", 6, seed=0)))
    assert main(["eval", "--path", str(path), "--model", str(smoke_checkpoint), "--modes", "joint", "--retrieval", "leading"]) == 0
    out = capsys.readouterr().out
    assert "per_question_accuracy" in out and "group_accuracy" in out
    assert "accuracy_by_type.boolean" in out
    assert re.search(r"per_question_accuracy_ci95 +[01]\.\d{3}-[01]\.\d{3}$", out, re.MULTILINE)


def test_eval_accuracy_by_type_adds_up_to_the_whole(smoke_checkpoint, tmp_path, capsys):
    path = tmp_path / "groups.jsonl"
    path.write_text("".join(json.dumps(g) + "\n" for g in generate_groups("validation", 6, seed=1)))
    args = ["eval", "--path", str(path), "--model", str(smoke_checkpoint), "--modes", "joint", "--json"]
    assert main([*args, "--retrieval", "leading"]) == 0
    joint = json.loads(capsys.readouterr().out)["joint"]
    counts, accuracy = joint["questions_by_type"], joint["accuracy_by_type"]
    assert set(counts) <= {"boolean", "enum", "integer", "date"} and sum(counts.values()) == joint["questions"]
    right = sum(accuracy[t] * counts[t] for t in counts)
    assert right == pytest.approx(joint["per_question_accuracy"] * joint["questions"])
    low, high = joint["ece_ci95"]
    assert 0.0 <= low <= high <= 1.0 and 0.0 <= joint["ece"] <= 1.0


def test_eval_accuracy_by_question_adds_up_and_sits_beside_the_yardstick(smoke_checkpoint, tmp_path, capsys):
    path = tmp_path / "groups.jsonl"
    groups = generate_groups("validation", 6, seed=1)
    path.write_text("".join(json.dumps(g) + "\n" for g in groups))
    args = ["eval", "--path", str(path), "--model", str(smoke_checkpoint), "--modes", "joint", "--retrieval", "leading"]
    assert main([*args, "--prior-from", str(path), "--json"]) == 0
    joint = json.loads(capsys.readouterr().out)["joint"]
    counts, accuracy = joint["questions_by_question"], joint["accuracy_by_question"]
    assert set(counts) == {q["id"] for g in groups for q in g["questions"]}
    assert sum(counts.values()) == joint["questions"]
    right = sum(accuracy[q] * counts[q] for q in counts)
    assert right == pytest.approx(joint["per_question_accuracy"] * joint["questions"])
    prior = joint["prior_accuracy_by_question"]
    assert sum(prior[q] * counts[q] for q in counts) == pytest.approx(joint["prior_accuracy"] * joint["questions"])
    assert main(args) == 0
    rows = [line.split()[0] for line in capsys.readouterr().out.splitlines()[1:] if line.strip()]
    assert "per_question_accuracy" in rows and not any("by_question" in row for row in rows)  # --json only


def test_eval_rejects_unknown_modes(capsys):
    assert main(["eval", "--path", str(SAMPLES / "nda.jsonl"), "--modes", "joint,fast"]) == 2
    assert "fast" in capsys.readouterr().err



def _evidence_line(tmp_path: Path) -> tuple[Path, list[str]]:
    """One labelled group over a document far longer than the smoke model's context, with gold evidence
    in a sentence that shares no word with the question."""
    sentences = [f"Clause {n}: the party number {n} keeps the tools of site {n}." for n in range(80)]
    sentences[57] = "Clause fifty-seven is left blank on purpose."
    text = " ".join(sentences)
    start = text.index(sentences[57])
    line = {
        "id": "g1",
        "document": {"text": text},
        "questions": [{"id": "q1", "text": "Which party keeps the tools?", "schema": {"type": "boolean"}}],
        "labels": {"q1": True},
        "evidence": {"q1": [[start, start + len(sentences[57])]]},
    }
    path = tmp_path / "evidence.jsonl"
    path.write_text(json.dumps(line) + "\n")
    return path, ["eval", "--path", str(path), "--modes", "joint", "--json"]


def test_eval_gold_evidence_first_shows_the_model_the_gold_evidence(smoke_checkpoint, tmp_path, capsys):
    path, args = _evidence_line(tmp_path)
    args += ["--model", str(smoke_checkpoint), "--retrieval", "lexical"]
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["joint"]["evidence_recall"] == 0.0
    assert main([*args, "--gold-evidence-first"]) == 0
    assert json.loads(capsys.readouterr().out)["joint"]["evidence_recall"] == 1.0


def test_eval_gold_evidence_first_needs_evidence_and_ranked_retrieval(smoke_checkpoint, tmp_path, capsys):
    path, args = _evidence_line(tmp_path)
    args += ["--model", str(smoke_checkpoint), "--gold-evidence-first"]
    assert main([*args, "--retrieval", "leading"]) == 2
    assert "needs --retrieval hybrid or lexical" in capsys.readouterr().err
    plain = ["eval", "--path", str(SAMPLES / "nda.jsonl"), "--model", str(smoke_checkpoint), "--gold-evidence-first"]
    assert main(plain) == 2
    assert "carry no gold evidence" in capsys.readouterr().err


def test_eval_gold_evidence_first_says_a_pointing_model_has_no_retrieval_to_rank(tmp_path, capsys):
    path, args = _evidence_line(tmp_path)  # the bundled model: its span pointer lays out the evidence
    assert main([*args, "--retrieval", "lexical", "--gold-evidence-first"]) == 2
    assert "lays out each question's evidence with its span pointer" in capsys.readouterr().err


def test_eval_contractnli_validation_reports_the_training_majority_baseline(smoke_checkpoint, tmp_path, capsys):
    from decision_engine.datasets.contractnli import load_contractnli, split_documents
    from decision_engine.evaluation import load_groups, majority_answers, prior_accuracy

    path = write_contractnli(tmp_path)
    base = ["eval", "--path", str(path), "--format", "contractnli", "--modes", "joint,independent", "--json",
            "--model", str(smoke_checkpoint), "--retrieval", "leading"]
    assert main([*base, "--split", "validation"]) == 0
    report = json.loads(capsys.readouterr().out)
    train, _ = split_documents(load_contractnli(path)[0])
    expected = prior_accuracy(load_groups(path, "contractnli", "validation"), majority_answers(d.labels for d in train))
    assert 0 < expected["prior_accuracy"] < 1  # the held-out documents hold some label the majority misses
    for mode in ("joint", "independent"):
        assert EVAL_FIELDS <= set(report[mode])
        assert report[mode]["prior_accuracy"] == expected["prior_accuracy"]
        assert report[mode]["prior_group_accuracy"] == expected["prior_group_accuracy"]
        assert 0 <= report[mode]["agrees_with_prior"] <= 1
        assert 0 < report[mode]["mean_passes"] <= report[mode]["mean_steps"]
    assert main([*base, "--split", "all"]) == 0  # the training documents' own labels are no yardstick
    assert "prior_accuracy" not in json.loads(capsys.readouterr().out)["joint"]


def test_agreement_with_fixed_answers_adds_up_over_the_labels(smoke_checkpoint, tmp_path):
    """Each answer equals exactly one of the three labels, so agreement with each, summed, is 1."""
    from decision_engine import factory
    from decision_engine.options import EngineOptions
    from decision_engine.datasets.contractnli import LABELS
    from decision_engine.evaluation import evaluate, load_groups

    groups = load_groups(write_contractnli(tmp_path), "contractnli", "all")
    engine = factory.build_engine(EngineOptions(str(smoke_checkpoint), retrieval="leading"))
    keys = {qid for g in groups for qid in g.labels}
    shares = [evaluate(engine, groups, "joint", priors={k: label for k in keys})["agrees_with_prior"] for label in LABELS]
    assert sum(shares) == pytest.approx(1.0)
    assert "agrees_with_prior" not in evaluate(engine, groups, "joint")


def test_generate_writes_the_generator_groups(tmp_path, capsys):
    out = tmp_path / "gen.jsonl"
    assert main(["generate", "--split", "train", "--count", "5", "--seed", "3", "--out", str(out)]) == 0
    assert [json.loads(line) for line in out.read_text().splitlines()] == generate_groups("train", 5, seed=3)
    assert main(["generate", "--count", "2"]) == 0  # held-out wording, seed 7, to standard output
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == generate_groups("validation", 2, seed=7)
    assert main(["generate", "--count", "-1"]) == 2
    assert "--count" in capsys.readouterr().err
    assert main(["generate", "--out", str(tmp_path / "no" / "such" / "folder.jsonl")]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_eval_prior_from_a_training_file(smoke_checkpoint, tmp_path, capsys):
    from decision_engine.evaluation import load_groups, majority_answers, prior_accuracy

    train, valid = tmp_path / "train.jsonl", tmp_path / "valid.jsonl"
    assert main(["generate", "--split", "train", "--count", "40", "--seed", "1", "--out", str(train)]) == 0
    assert main(["generate", "--count", "8", "--out", str(valid)]) == 0
    args = ["eval", "--path", str(valid), "--modes", "joint", "--json", "--model", str(smoke_checkpoint),
            "--retrieval", "leading"]
    assert main([*args, "--prior-from", str(train)]) == 0
    joint = json.loads(capsys.readouterr().out)["joint"]
    priors = majority_answers(g.labels for g in load_groups(train, "jsonl"))
    assert joint["prior_accuracy"] == prior_accuracy(load_groups(valid, "jsonl"), priors)["prior_accuracy"]
    assert 0 <= joint["agrees_with_prior"] <= 1
    assert main([*args, "--prior-from", str(tmp_path / "missing.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "--prior-from" in err and "no such file" in err
    unlabelled = tmp_path / "unlabelled.jsonl"
    unlabelled.write_text(json.dumps({"document": {"text": "x"}, "questions": []}) + "\n")
    assert main([*args, "--prior-from", str(unlabelled)]) == 2
    assert "no line carries" in capsys.readouterr().err


def test_swap_documents_asks_each_group_of_another_document(tmp_path):
    from decision_engine.evaluation import load_groups, swap_documents

    groups = load_groups(write_contractnli(tmp_path, documents=3), "contractnli", "all")
    swapped = swap_documents(groups)
    texts = [g.request_line["document"]["text"] for g in groups]
    moved = [g.request_line["document"]["text"] for g in swapped]
    assert all(a != b for a, b in zip(texts, moved))
    assert sorted(set(moved)) == sorted(set(texts))  # every document is still asked, of other questions
    assert [g.labels for g in swapped] == [g.labels for g in groups]
    assert all(g.evidence == {} and g.request_line["evidence"] == {} for g in swapped)
    with pytest.raises(ValueError, match="at least two different documents"):
        swap_documents(groups[:1])


def test_eval_swap_documents(smoke_checkpoint, tmp_path, capsys):
    path = write_contractnli(tmp_path, documents=3)
    args = ["eval", "--path", str(path), "--format", "contractnli", "--modes", "joint", "--json",
            "--model", str(smoke_checkpoint), "--retrieval", "leading", "--swap-documents"]
    assert main(args) == 0
    joint = json.loads(capsys.readouterr().out)["joint"]
    assert joint["questions"] == 9 and "evidence_recall" not in joint
    assert main([arg for arg in args if arg != "--swap-documents"]) == 0
    own = json.loads(capsys.readouterr().out)["joint"]
    assert joint["own_documents"] == {key: own[key] for key in ("per_question_accuracy", "group_accuracy")}
    assert joint["swap_drop"] == pytest.approx(own["per_question_accuracy"] - joint["per_question_accuracy"])
    assert joint["swap_group_drop"] == pytest.approx(own["group_accuracy"] - joint["group_accuracy"])
    assert main([*args, "--gold-evidence-first"]) == 2
    assert "drop --gold-evidence-first" in capsys.readouterr().err
    assert main([*args, "--limit", "1"]) == 2
    assert "at least two different documents" in capsys.readouterr().err


def test_fit_chooser_adds_a_value_chooser_beside_an_unchanged_reader(smoke_checkpoint, tmp_path, capsys):
    out = tmp_path / "chosen"
    held_out = tmp_path / "held_out.jsonl"
    assert main(["generate", "--count", "3", "--out", str(held_out)]) == 0
    capsys.readouterr()
    assert main([
        "fit-chooser", "--model", str(smoke_checkpoint), "--out", str(out), "--groups", "6", "--epochs", "2",
        "--validation", str(held_out),
    ]) == 0
    fitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fitted["examples"] > 0 and fitted["groups"] == 6
    assert fitted["held_out"]["questions"] > 0 and 0 <= fitted["held_out"]["accuracy"] <= 1
    before, _ = load_checkpoint(smoke_checkpoint)
    after, meta = load_checkpoint(out)
    assert after.value_chooser is not None and before.value_chooser is None
    assert meta["training"]["value_chooser"]["examples"] == fitted["examples"]
    reader = {k: v for k, v in after.state_dict().items() if not k.startswith("value_chooser.")}
    assert all(torch.equal(v, before.state_dict()[k]) for k, v in reader.items())


def test_fit_chooser_cue_around_is_saved_with_the_chooser(smoke_checkpoint, tmp_path, capsys):
    args = ["fit-chooser", "--model", str(smoke_checkpoint), "--groups", "2", "--epochs", "1"]
    assert main([*args, "--out", str(tmp_path / "before"), "--cue", "before"]) == 0
    assert main([*args, "--out", str(tmp_path / "around"), "--cue", "around"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["cue"] == "around"
    assert load_checkpoint(tmp_path / "before")[0].value_chooser.around_cue == 0
    assert load_checkpoint(tmp_path / "around")[0].value_chooser.around_cue == 1
    with pytest.raises(SystemExit):
        main([*args, "--out", str(tmp_path / "x"), "--cue", "after"])


def test_fit_chooser_by_default_fits_one_chooser_per_cue_and_averages_them(smoke_checkpoint, tmp_path, capsys):
    from decision_engine.reader.chooser_ensemble import ChooserEnsemble

    out = tmp_path / "both"
    assert main(["fit-chooser", "--model", str(smoke_checkpoint), "--out", str(out), "--groups", "3", "--epochs", "1"]) == 0
    fitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fitted["cue"] == "both" and len(fitted["members"]) == 2
    model, meta = load_checkpoint(out)
    assert meta["config"]["value_choosers"] == 2 and isinstance(model.value_chooser, ChooserEnsemble)
    assert [float(m.around_cue) for m in model.value_chooser.members] == [0.0, 1.0]
    first, second = (dict(m.named_parameters()) for m in model.value_chooser.members)
    assert any(not torch.equal(first[k], second[k]) for k in first)  # each member fitted on its own cue


def test_fit_chooser_question_variants_multiply_the_training_questions(smoke_checkpoint, tmp_path, capsys):
    args = ["fit-chooser", "--model", str(smoke_checkpoint), "--groups", "2", "--epochs", "1"]
    assert main([*args, "--out", str(tmp_path / "plain")]) == 0
    plain = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert main([*args, "--out", str(tmp_path / "varied"), "--question-variants", "2"]) == 0
    varied = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert varied["examples"] == 3 * plain["examples"] > 0
    assert varied["question_variants"] == 2 and "question_variants" not in plain
    assert main([*args, "--out", str(tmp_path / "bad"), "--question-variants", "-1"]) == 2
    assert "--question-variants" in capsys.readouterr().err


def test_a_value_chooser_of_another_layout_is_a_clear_error_and_can_be_fitted_again(smoke_checkpoint, tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    from decision_engine.model.loader import ModelLoadError

    out = tmp_path / "chosen"
    args = ["--groups", "2", "--epochs", "1", "--cue", "before"]
    assert main(["fit-chooser", "--model", str(smoke_checkpoint), "--out", str(out), *args]) == 0
    state = load_file(str(out / "model.safetensors"))
    state["value_chooser.query.weight"] = state["value_chooser.query.weight"][:128].contiguous()  # an older layout's width
    save_file(state, str(out / "model.safetensors"))
    with pytest.raises(ModelLoadError, match="fit-chooser"):
        load_checkpoint(out)
    refitted = tmp_path / "refitted"
    assert main(["fit-chooser", "--model", str(out), "--out", str(refitted), *args]) == 0
    model, _ = load_checkpoint(refitted)
    assert model.value_chooser.query.weight.shape[0] > 128


def test_fit_comparer_adds_a_comparison_chooser_started_from_the_value_chooser(tmp_path, capsys):
    out = tmp_path / "plain"
    assert main(["train", "--config", "smoke", "--out", str(out), "--retrieval", "leading"]) == 0
    assert main(["fit-comparer", "--model", str(out), "--out", str(tmp_path / "x"), "--groups", "2"]) == 2
    assert "no value chooser" in capsys.readouterr().err
    chosen = tmp_path / "chosen"
    assert main(["fit-chooser", "--model", str(out), "--out", str(chosen), "--groups", "2", "--epochs", "1"]) == 0
    compared = tmp_path / "compared"
    assert main(["fit-comparer", "--model", str(chosen), "--out", str(compared), "--groups", "4", "--epochs", "1"]) == 0
    model, meta = load_checkpoint(compared)
    assert model.cfg.compares_values and meta["training"]["comparison_chooser"]["examples"] > 0
    assert model.cfg.comparer_sides == model.cfg.value_choosers == 2  # each side as the value chooser: one per cue
    assert model.cfg.comparer_answers_alone and model.comparison_chooser.answers_alone  # taught its sides
    assert "value_chooser" in meta["training"]  # the value chooser's record is kept
    chooser, _ = load_checkpoint(chosen)
    for name, p in chooser.value_chooser.named_parameters():
        assert torch.equal(p, dict(model.value_chooser.named_parameters())[name]), name  # unchanged


def test_fit_chooser_names_a_folder_that_is_not_a_checkpoint(tmp_path, capsys):
    assert main(["fit-chooser", "--model", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "not a checkpoint" in capsys.readouterr().err


def test_training_with_choosers_fits_them_first_and_a_continued_run_may_keep_them(tmp_path):
    config = tmp_path / "chooser.json"
    settings = TrainConfig.load("smoke").to_dict() | {
        "chooses_values": True, "chooser_groups": 4, "chooser_epochs": 1, "chooser_cue": "both",
        "compares_values": True, "comparer_groups": 4, "comparer_epochs": 1,
    }
    config.write_text(json.dumps(settings))
    out = tmp_path / "trained"
    assert main(["train", "--config", str(config), "--out", str(out), "--retrieval", "leading"]) == 0
    model, meta = load_checkpoint(out)
    assert model.cfg.chooses_values and model.value_chooser is not None
    assert meta["training"]["value_chooser"]["examples"] > 0
    assert meta["training"]["value_chooser"]["cue"] == "both" and len(meta["training"]["value_chooser"]["members"]) == 2
    assert model.cfg.value_choosers == model.cfg.comparer_sides == 2  # one chooser per cue, on each side too
    assert model.cfg.comparer_answers_alone
    assert model.cfg.compares_values and model.comparison_chooser is not None
    assert meta["training"]["comparison_chooser"]["examples"] > 0

    # a continued run with no chooser groups keeps the loaded choosers while the reader trains on
    config.write_text(json.dumps(settings | {"init_from": str(out), "first_epoch": 1, "chooser_groups": 0, "comparer_groups": 0}))
    continued = tmp_path / "continued"
    assert main(["train", "--config", str(config), "--out", str(continued), "--retrieval", "leading"]) == 0
    kept, meta = load_checkpoint(continued)
    assert meta["training"]["value_chooser"] == {"kept_from": str(out)}
    assert meta["training"]["comparison_chooser"] == {"kept_from": str(out)}
    choosers = ("value_chooser.", "comparison_chooser.")
    before = dict(model.named_parameters())
    for name, p in kept.named_parameters():
        if name.startswith(choosers):
            assert torch.equal(p, before[name]), name
    assert any(not torch.equal(p, before[n]) for n, p in kept.named_parameters() if not n.startswith(choosers))


class _Interrupted(Exception):
    pass


def test_an_interrupted_run_resumes_from_its_last_epoch(tmp_path, capsys):
    from decision_engine.training.loop import train
    from decision_engine.training.resume import RESUME_FILE

    cfg = TrainConfig(**(TrainConfig.load("smoke").to_dict() | {"epochs": 3, "max_steps": None}))
    whole = train(cfg, tmp_path / "whole", log=lambda _: None)

    def stop_in_epoch_three(line: str) -> None:
        if line.startswith("epoch 3/3"):
            raise _Interrupted

    out = tmp_path / "resumed"
    with pytest.raises(_Interrupted):
        train(cfg, out, log=stop_in_epoch_three)
    assert (out / RESUME_FILE).is_file() and not (out / "config.json").exists()
    lines = []
    resumed = train(cfg, out, log=lines.append, resume=True)
    assert any(line.startswith("resuming") and "epoch 3/3" in line for line in lines)
    assert not any(line.startswith(("epoch 1/3", "epoch 2/3")) for line in lines)
    assert resumed["steps"] == whole["steps"] and resumed["blocks_seen"] == whole["blocks_seen"]
    assert not (out / RESUME_FILE).exists()
    after, _ = load_checkpoint(out)
    uninterrupted, _ = load_checkpoint(tmp_path / "whole")
    for key, value in uninterrupted.state_dict().items():
        assert torch.equal(after.state_dict()[key], value), key  # the same groups, in the same order


def test_resume_names_what_is_missing_or_changed(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--config", "smoke", "--out", str(out), "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    from decision_engine.training.loop import train
    from decision_engine.training.resume import ResumeError

    cfg = TrainConfig(**(TrainConfig.load("smoke").to_dict() | {"epochs": 2, "max_steps": None}))

    def stop_in_epoch_two(line: str) -> None:
        if line.startswith("epoch 2/2"):
            raise _Interrupted

    with pytest.raises(_Interrupted):
        train(cfg, out, log=stop_in_epoch_two)
    with pytest.raises(ResumeError, match="learning_rate"):
        train(TrainConfig(**(cfg.to_dict() | {"learning_rate": 1.0})), out, resume=True)

def test_the_training_seed_never_moves_held_out_contractnli_documents_into_training(tmp_path):
    from decision_engine.datasets.contractnli import load_contractnli, split_documents
    from decision_engine.training.loop import epoch_lines, evidenced_lines

    path = write_contractnli(tmp_path, documents=20)
    _, held_out = split_documents(load_contractnli(path)[0])  # what eval --split validation decides
    held_out_texts = {d.text for d in held_out}
    for seed in range(4):
        cfg = replace(TrainConfig.load("smoke"), contractnli_path=str(path), seed=seed, generated_groups_per_epoch=0)
        trained = {line["document"]["text"] for line in epoch_lines(cfg, 0, random.Random(seed))}
        trained |= {line["document"]["text"] for line in evidenced_lines(cfg)}
        assert trained and not trained & held_out_texts
        assert {line["document"]["text"] for line in evidenced_lines(cfg, held_out=True)} == held_out_texts


def test_fit_chooser_new_operations_teaches_an_older_chooser_counts_and_holds_the_rest(smoke_checkpoint, tmp_path, capsys):
    from decision_engine.grounding.candidates import COUNT, OPERATIONS
    from decision_engine.reader.chooser_ensemble import chooser_state_with_operations, value_chooser
    from decision_engine.reader.value_chooser import operation_slices

    fitted = tmp_path / "fitted"
    assert main(["fit-chooser", "--model", str(smoke_checkpoint), "--out", str(fitted), "--groups", "3", "--epochs", "1"]) == 0
    model, _ = load_checkpoint(fitted)
    older = value_chooser(2, COUNT)  # as a checkpoint saved before counts holds it
    older.load_state_dict(chooser_state_with_operations(model.value_chooser.state_dict(), COUNT))
    model.value_chooser, model.cfg = older, replace(model.cfg, chooser_operations=COUNT)
    save_checkpoint(model, tmp_path / "older", "older")
    before, _ = load_checkpoint(tmp_path / "older")
    assert before.cfg.chooser_operations == COUNT
    capsys.readouterr()
    taught = tmp_path / "taught"
    assert main(["fit-chooser", "--new-operations", "--model", str(tmp_path / "older"), "--out", str(taught),
                 "--groups", "3", "--epochs", "2"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["operations_fitted"] == ["count_at_least"]
    after, meta = load_checkpoint(taught)
    assert after.cfg.chooser_operations == len(OPERATIONS) and "new_operations" in meta["training"]["value_chooser"]
    held = operation_slices(0, COUNT)
    for m, (old, new) in enumerate(zip(before.value_chooser.members, after.value_chooser.members)):
        new_state = new.state_dict()
        for name, tensor in old.state_dict().items():
            if name in held:
                dim, part = held[name]
                assert torch.equal(new_state[name].narrow(dim, 0, part.stop), tensor.narrow(dim, 0, part.stop)), (m, name)
            else:
                assert torch.equal(new_state[name], tensor), (m, name)
