"""The verdict reader: a hypothesis read with its evidence by the base encoder under low-rank updates."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from conftest import FakeModel
from decision_engine.engine import DecisionEngine
from decision_engine.reader.verdict_reader import VERDICTS, VerdictReader, load_base_encoder, tokenize_pairs, verdict_of

sys.path.insert(0, str(Path(__file__).parent))
from test_absence_gate import NLI, StrengthContext, leaning_logits, nli_request  # noqa: E402

PAIRS = (["The recipient may share the information with its employees."], [["Employees may receive it.", "Other text."]])


@pytest.mark.parametrize(
    "choice, verdict",
    [("not mentioned", 0), ("Not_Mentioned", 0), ("n/a", 0), ("entailment", 1), ("Entailed", 1),
     ("contradiction", 2), (" contradicted ", 2), ("yes", None), ("maybe", None), (True, None)],
)
def test_choices_are_read_as_verdicts_by_their_words(choice, verdict):
    assert verdict_of(choice) == verdict


def test_choice_bias_gives_each_choice_its_verdicts_log_probability():
    reader = VerdictReader(rank=2)
    log_probs = torch.tensor([-0.1, -2.0, -3.0])
    assert reader.choice_bias(NLI, log_probs) == pytest.approx([-2.0, -3.0, -0.1])
    assert reader.choice_bias(["entailment", "other"], log_probs) == pytest.approx([-2.0, 0.0])


def encoder_output(encoder, encoded) -> torch.Tensor:
    with torch.no_grad():
        return encoder(**encoded).last_hidden_state


def test_an_untrained_reader_leaves_the_base_encoder_as_it_is():
    reader = VerdictReader(rank=2)
    base, tokenizer = load_base_encoder()
    encoded = tokenize_pairs(tokenizer, *PAIRS)
    merged, _ = reader.encoder()
    assert torch.allclose(encoder_output(merged, encoded), encoder_output(base, encoded), atol=1e-6)


@pytest.mark.parametrize("wide", [False, True])
def test_the_merged_encoder_reads_as_the_hooked_one_it_was_trained_as(wide):
    torch.manual_seed(0)
    reader = VerdictReader(rank=4, wide=wide).eval()
    with torch.no_grad():
        for name, parameter in reader.named_parameters():
            if name.endswith("up"):
                parameter.normal_(std=0.05)
    if wide:  # every projection of every layer is updated
        assert reader.targets == ("query", "key", "value", "attn_out", "ff_in", "ff_out")
        assert reader.ff_in_up.shape == (6, 1536, 4) and reader.ff_out_down.shape == (6, 4, 1536)
    base, tokenizer = load_base_encoder()
    encoded = tokenize_pairs(tokenizer, *PAIRS)
    plain = encoder_output(base, encoded)
    hooks = reader.attach(base)
    hooked = encoder_output(base, encoded)
    for hook in hooks:
        hook.remove()
    merged, _ = reader.encoder()
    assert not torch.allclose(hooked, plain, atol=1e-3)  # the updates change what the encoder reads
    assert torch.allclose(encoder_output(merged, encoded), hooked, atol=1e-5)
    log_probs = reader.log_probs(*PAIRS)
    assert log_probs.shape == (1, len(VERDICTS)) and torch.allclose(log_probs.exp().sum(-1), torch.ones(1))


class LeaningVerdicts:
    """A verdict reader stand-in sure of one verdict for every hypothesis; records what it read."""

    def __init__(self, verdict: int):
        self.verdict, self.read = verdict, []

    def log_probs(self, hypotheses, evidence):
        self.read.append((list(hypotheses), [list(e) for e in evidence]))
        row = torch.full((len(VERDICTS),), -8.0)
        row[self.verdict] = 0.0
        return row.expand(len(hypotheses), -1)

    def choice_bias(self, choices, log_probs):
        return VerdictReader.choice_bias(None, choices, log_probs)


@pytest.mark.parametrize("mode", ["joint", "independent", "sequential"])
def test_a_sure_verdict_reader_turns_hypothesis_answers_in_every_mode(vocab, mode):
    answers = {}
    for verdict in (None, 2):
        model = FakeModel(vocab, leaning_logits(vocab))  # the reader leans to "entailment"
        if verdict is not None:
            model.verdict_reader = LeaningVerdicts(verdict)
        engine = DecisionEngine(model, context=StrengthContext(vocab, 10.0))
        response = engine.decide(nli_request(mode))
        answers[verdict] = [a.value for a in response.answers]
        if verdict is not None:
            asked = [h for hypotheses, _ in model.verdict_reader.read for h in hypotheses]
            assert sorted(asked) == ["Hypothesis 0.", "Hypothesis 1."]
    assert answers[None] == ["entailment"] * 2
    assert answers[2] == ["contradiction"] * 2


def test_only_hypothesis_slots_are_read(vocab):
    from decision_engine.types import AnswerSchema, DecisionRequest, Document, Question

    model = FakeModel(vocab, leaning_logits(vocab))
    model.verdict_reader = LeaningVerdicts(2)
    questions = [
        Question(id="fact", text="Is it mentioned?", schema=AnswerSchema(type="string", enum=["yes", "no", "not mentioned"])),
        Question(id="h", text="Hypothesis.", schema=AnswerSchema(type="string", enum=NLI)),
    ]
    request = DecisionRequest(document=Document(text="Some clause."), questions=questions)
    DecisionEngine(model, context=StrengthContext(vocab, 10.0)).decide(request)
    assert [h for hypotheses, _ in model.verdict_reader.read for h in hypotheses] == ["Hypothesis."]


def test_fit_verdict_names_what_it_cannot_use(tmp_path, capsys):
    from contractnli_fit_checks import check_names_what_it_cannot_use

    from decision_engine.cli import main

    args = check_names_what_it_cannot_use("fit-verdict", tmp_path, capsys)
    assert main([*args, str(tmp_path / "bad.json"), "--epochs", "0"]) == 2
    assert "--epochs" in capsys.readouterr().err
    assert main([*args, str(tmp_path / "bad.json"), "--drills", "-1"]) == 2
    assert "--drills" in capsys.readouterr().err


def test_fit_verdict_fits_a_reader_the_loaded_model_uses_and_leaves_the_rest_alone(tmp_path, capsys):
    from test_pointed_evidence import trained_pointed_model

    from decision_engine.cli import main
    from decision_engine.model.loader import load_checkpoint
    from decision_engine.models import open_model
    from decision_engine.factory import build_engine

    data = trained_pointed_model(tmp_path)
    capsys.readouterr()
    out = tmp_path / "verdicts"
    args = ["fit-verdict", "--model", str(tmp_path / "model"), "--out", str(out), "--contractnli", str(data)]
    assert main([*args, "--epochs", "1", "--rank", "2", "--drills", "6"]) == 0
    fitted = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert fitted["hypotheses"] > 0 and fitted["rank"] == 2 and len(fitted["losses"]) == 1
    assert fitted["drills"] == 6
    assert 0.0 <= fitted["held_out_accuracy"] <= 1.0
    before, _ = load_checkpoint(tmp_path / "model")
    after, meta = load_checkpoint(out)
    assert meta["config"]["reads_verdicts"] and meta["training"]["verdict_reader"]["hypotheses"] == fitted["hypotheses"]
    assert after.verdict_reader.up.abs().sum() > 0  # trained away from its zero start
    rest = {k: v for k, v in after.state_dict().items() if not k.startswith("verdict_reader.")}
    assert rest.keys() == before.state_dict().keys()
    assert all(torch.equal(v, before.state_dict()[k]) for k, v in rest.items())
    model = open_model(out)
    assert model.verdict_reader is not None
    response = build_engine(model=model).decide(nli_request())
    assert all(a.value in NLI for a in response.answers)

    # a wide reader, the span pointer stored in int8 from now on; a part the checkpoint lacks is named
    assert main([*args[:4], str(tmp_path / "bad"), *args[5:], "--epochs", "1", "--int8", "no_such_part"]) == 2
    assert "no part 'no_such_part'" in capsys.readouterr().err
    wide = tmp_path / "wide"
    assert main([*args[:4], str(wide), *args[5:], "--epochs", "1", "--rank", "2", "--wide", "--int8", "span_pointer"]) == 0
    capsys.readouterr()
    loaded, meta = load_checkpoint(wide)
    assert meta["config"]["verdict_wide"] and meta["stored_in_int8"] == ["span_pointer"]
    assert loaded.verdict_reader.ff_in_up.abs().sum() > 0
    step = before.span_pointer.question.weight.abs().amax(dim=-1, keepdim=True) / 127
    assert ((loaded.span_pointer.question.weight - before.span_pointer.question.weight).abs() <= 0.6 * step + 1e-3).all()
