"""Training configurations: the presets a user needs, or a JSON file with the same fields.

Experiments (tried, compared, not shipped) live as JSON files under `experiments/` at the top of the
repository, with their measured results in `experiments/README.md`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

CHOOSER_CUES = ("before", "around", "both")  # how a value chooser reads a mention (`fit-chooser --cue`)


@dataclass
class TrainConfig:
    name: str = "cpu"  # names the checkpoint (decision-model-<name>) and, for a JSON config, its runs/ folder
    model: str = "minilm-l6"  # preset of BlockDiffusionConfig; "minilm-l6" starts from the base encoder
    from_base: bool = True  # initialise from the pinned base encoder (else random)
    max_positions: int = 512  # prefix + answer block; above 512 the base positions are interpolated
    context_tokens: int = 320  # document tokens shown to the model (inference uses the same cap)
    contractnli_path: str | None = None  # ContractNLI JSON; None trains on generated groups only
    contractnli_validation_fraction: float = 0.2  # held out by document, never trained on
    contractnli_split_seed: int = 0  # which documents are held out: `eval --split validation`'s, whatever `seed` is
    contractnli_folds: int = 0  # k >= 2: the training documents are dealt into k folds and one is left out (`calibrate --cross-fit`)
    contractnli_left_out_fold: int = 0  # with contractnli_folds: the fold this run never sees
    generated_groups_per_epoch: int = 2000  # fresh linked compliance groups each epoch
    contractnli_repeats: int = 1  # passes over the ContractNLI training documents per epoch
    independent_share: float = 0.25  # share of groups also trained as single-question runs
    epochs: int = 3
    batch_size: int = 8
    learning_rate: float = 1e-4
    warmup_steps: int = 100
    weight_decay: float = 0.01
    constrained_loss: bool = True  # softmax over the tokens each position's schema allows (as decoding does), not the vocabulary
    per_question_loss: bool = False  # each question's masked tokens weigh as one, whatever its answer's length
    question_summary: bool = False  # answer positions also read their question's pooled prefix states (stored in the checkpoint)
    split_digits: bool = False  # numbers read digit by digit, as answer slots write them (stored in the checkpoint)
    freeze_word_embeddings: bool = True  # keeps the shipped checkpoint small (embeddings come from base)
    init_from: str | None = None  # checkpoint folder to continue from (e.g. an earlier stage's); "bundled": the shipped weights
    first_epoch: int = 0  # data epochs an earlier run already drew, so a continued run sees fresh groups
    max_minutes: float | None = None  # stop early (and save) after this much wall time
    max_steps: int | None = None  # stop after this many optimiser steps
    data_workers: int = 0  # processes laying out examples, one epoch ahead (0: in the training process)
    bf16: bool = False  # autocast the forward pass to bfloat16 (for GPUs; weights and optimiser stay fp32)
    reads_documents: bool = False  # the reading model: whole documents encoded once by the frozen base (training/reading.py)
    evidence_weight: float = 1.0  # reading model: weight of the pointer's evidence loss beside the answer loss
    hidden_evidence_share: float = 0.5  # reading model: share of evidenced questions also asked with that evidence hidden
    frozen_layers: int = 3  # reading model: lower question-prefix layers left as the base has them
    points_at_spans: bool = False  # a span pointer lays each question's own evidence beside it (retrieval/pointed.py)
    segments_read_alone: bool = False  # with points_at_spans: each question's prefix reads only itself and its evidence
    summary_from_marker: bool = False  # with points_at_spans: a question's summary is its marker's state, not its segment's mean (stored in the checkpoint)
    pointer_epochs: int = 20  # passes of the pointer over the gold-evidenced training documents, before the reader trains (0: kept as loaded)
    pointer_identity_penalty: float = 1e-3  # weight of ||W - I||^2 holding the pointer's form near cosine ranking
    pointer_folds: int = 0  # k >= 2: each ContractNLI training document laid out by a pointer fitted on the other folds (cross_fitting.py)
    contrastive_share: float = 0.0  # per ContractNLI pass, the share of documents also given with some evidence cut out
    chooses_values: bool = False  # a value chooser grounds integer and date slots in the document's mentions
    chooser_groups: int = 1000  # generated training groups the chooser learns from (0: a continued model's chooser kept as it is)
    chooser_epochs: int = 40  # passes of the chooser over them (frozen vectors: seconds each)
    chooser_cue: str = "before"  # how a fresh chooser reads a mention: "before", "around" or "both" (`fit-chooser --cue`)
    compares_values: bool = False  # a comparison chooser may answer boolean slots by comparing two values (needs chooses_values)
    comparer_groups: int = 1000  # generated training groups the comparison chooser learns from (0: a continued model's kept)
    comparer_epochs: int = 20  # passes of the comparison chooser over their boolean questions
    answer_layers: bool = False  # the answer block trains layers of its own over the frozen base's prefix states, encoded once per example
    prefix_cache_gb: float = 6.0  # with answer_layers: bound on the prefix states kept across steps and epochs
    seed: int = 0
    log_every: int = 20

    def __post_init__(self):
        if self.chooser_cue not in CHOOSER_CUES:
            raise ValueError(f"chooser_cue must be one of {', '.join(CHOOSER_CUES)}, not {self.chooser_cue!r}")
        if self.contractnli_folds and not 0 <= self.contractnli_left_out_fold < self.contractnli_folds:
            raise ValueError(
                f"contractnli_left_out_fold must name one of the {self.contractnli_folds} folds (0 to "
                f"{self.contractnli_folds - 1}), not {self.contractnli_left_out_fold}"
            )

    @classmethod
    def load(cls, name_or_path: str) -> TrainConfig:
        if name_or_path in PRESETS:
            return cls(**PRESETS[name_or_path])
        path = Path(name_or_path)
        if not path.is_file():
            raise ValueError(f"unknown config {name_or_path!r}: not a preset {sorted(PRESETS)} nor a file")
        return cls.from_dict(json.loads(path.read_text()), str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str) -> TrainConfig:
        """The config `data` holds (a JSON config, or one a checkpoint recorded); errors name `source`."""
        data = dict(data)
        for key, kept in RETIRED.items():
            if key in data and data.pop(key) != kept:
                raise ValueError(
                    f"{source}: {key} was retired (this code always trains as {key}={json.dumps(kept)}); "
                    "experiments/README.md names a revision that runs it"
                )
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{source}: unknown config fields {unknown}")
        try:
            return cls(**data)
        except (ValueError, TypeError) as error:
            raise ValueError(f"{source}: {error}") from None

    def to_dict(self) -> dict:
        return asdict(self)


# Fields retired because no shipped model used them and their runs measured no gain, with the value
# the code now always trains with. A JSON config (such as a checkpoint's recorded one) may still name
# one at that value, which means the same run; any other value needs an older revision.
RETIRED: dict[str, object] = {
    "isolate_questions": False,  # experiments/retired/cpu-isolated.json: below stage 4 in both modes
    "gold_evidence_share": 0.0,  # experiments/retired/cpu-gold-evidence.json: within noise of the shipped model
    "inverse_t_weighting": True,  # experiments/retired/weighting-flat.json: the 1/t weighting ahead in 3 of 4 figures
    "contractnli_min_group": 2,  # experiments/retired/cpu-summary-wide.json: within noise
}

PRESETS: dict[str, dict] = {
    # A few optimiser steps of a tiny random model on generated groups: the test suite's smoke run.
    "smoke": dict(
        name="smoke", model="tiny", from_base=False, generated_groups_per_epoch=16, epochs=1,
        batch_size=4, max_steps=3, warmup_steps=1, context_tokens=128, freeze_word_embeddings=False,
    ),
    # The bundled model's reader: answer layers of its own over the frozen base encoder's prefix states,
    # which are encoded once per example and kept across steps and epochs (about 6 minutes on a 2-core
    # CPU). `decision-engine train-all` (training/recipe.py) fits every head over it; the bundled model
    # grafts it under the heads fitted over the `heads-reader` run.
    "shipped": dict(
        name="answer-layers-3", points_at_spans=True, segments_read_alone=True, pointer_epochs=20, chooses_values=True,
        question_summary=True, constrained_loss=True, generated_groups_per_epoch=200, contractnli_repeats=2,
        epochs=3, learning_rate=1.5e-4, warmup_steps=30, max_minutes=40.0, log_every=20, answer_layers=True,
        prefix_cache_gb=9.0,
    ),
    # The reader the bundled model's heads are fitted over, and the bundled reader until 2026-12-07: from
    # the base encoder with the span pointer, each question reading only its own evidence, and two value
    # choosers for integer and date slots, one per cue (about 40 minutes on a 2-core CPU). The six-stage
    # recipe of the model bundled before it is experiments/cpu.json, then the other experiments/cpu-*.json
    # (its last stage: experiments/cpu-stage6.json).
    "heads-reader": dict(
        name="pointed-base", points_at_spans=True, segments_read_alone=True, pointer_epochs=20, chooses_values=True,
        chooser_cue="both",
        question_summary=True, constrained_loss=True, generated_groups_per_epoch=300, contractnli_repeats=2,
        epochs=3, learning_rate=1.5e-4, warmup_steps=30, max_minutes=40.0, log_every=10,
    ),
    # The GPU stage: the shipped reader continued on many more fresh groups, sized for one H200 for
    # a few minutes (bf16 autocast, examples laid out by worker processes one epoch ahead). Its
    # pointers, value choosers and comparer stay as shipped; the gate and the verdict reader are not
    # trained here and carry over; refit the calibration maps afterwards (`calibrate`).
    "gpu": dict(
        name="gpu", init_from="bundled", first_epoch=10, generated_groups_per_epoch=4000, contractnli_repeats=4,
        epochs=12, batch_size=32, learning_rate=1e-4, warmup_steps=50, max_minutes=3.5, log_every=50,
        constrained_loss=True, question_summary=True, data_workers=12, bf16=True,
        pointer_epochs=0, chooser_groups=0, comparer_groups=0,
    ),
}
