"""A BERT-shaped block-diffusion transformer with a cached prefix.

Prefix tokens (document context and questions) attend bidirectionally among
themselves and never to the answer block, so each layer's prefix keys and values
are computed once. Answer-block tokens attend to the prefix and bidirectionally
within the block. The output head is tied to the input embeddings. Each token
also gets a learned embedding of the question slot it belongs to.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from ..grounding.candidates import COUNT, OPERATIONS
from ..kernels.block_attention import block_attention_fused, block_attention_triton, pack_prefix
from ..kernels.dispatch import use_triton
from .segments import SegmentLayout


@dataclass
class BlockDiffusionConfig:
    vocab_size: int = 30522  # BERT uncased WordPiece
    hidden: int = 384  # model width
    layers: int = 6
    heads: int = 12
    intermediate: int = 1536  # feed-forward width
    max_positions: int = 512  # prefix + answer block
    type_vocab: int = 2  # segment 0: prefix, 1: answer block
    max_slots: int = 8  # questions per request; index 0 means "no slot"
    layer_norm_eps: float = 1e-12
    split_digits: bool = False  # trained on text whose digits stand alone (see Vocabulary.split_digits)
    question_summary: bool = False  # answer positions also read their own question's pooled prefix states
    reads_documents: bool = False  # the whole document is encoded once and read by every layer (model/reading.py)
    points_at_spans: bool = False  # a span pointer (reader/span_pointer.py) lays each question's own evidence beside it
    orders_evidence: bool = False  # with points_at_spans: a second span pointer orders the evidence each answer reports
    segments_read_alone: bool = False  # with per-question evidence, each question's prefix tokens attend only to their own
    chooses_values: bool = False  # a value chooser (reader/value_chooser.py) grounds integer and date slots in mentions
    value_choosers: int = 1  # with chooses_values: more than one averages their probabilities (reader/chooser_ensemble.py)
    # with chooses_values: the operations (the first of grounding.candidates.OPERATIONS) its choosers have
    # forms for, and so offer; checkpoints saved before counts have no entry and know the 9 before them
    chooser_operations: int = len(OPERATIONS)
    # with chooses_values: its choosers (and the comparison chooser's sides) read each value mention in the
    # token states of the span the pointer embeds, not in a window of its own (retrieval/embedder.py)
    mentions_in_spans: bool = False
    # with chooses_values: value choosers fitted with more kinds of questions (values asked as written,
    # datasets/as_written.py, or value drills, datasets/value_drills.py) that answer a
    # grounded slot in their stead where the value choosers are unsure (reader/fallback_chooser.py); 0: none
    generic_choosers: int = 0
    generic_below: float = 0.2  # with generic_choosers: the value choosers' top probability under which they answer
    compares_values: bool = False  # a comparison chooser (reader/comparison_chooser.py) may answer boolean slots
    comparer_sides: int = 1  # with compares_values: value choosers per side of a comparison, averaged
    # with compares_values: its false and true stand on their own odds; the readers weigh in only where
    # it hands the slot over ("write"). Otherwise a compared answer needs the choice reader to agree
    comparer_answers_alone: bool = False
    reads_verdicts: bool = False  # a verdict reader (reader/verdict_reader.py) weighs in on hypothesis slots
    verdict_rank: int = 8  # with reads_verdicts: the rank of its updates of the base encoder
    verdict_wide: bool = False  # with reads_verdicts: attention output and feed-forward projections updated too
    reads_choices: bool = False  # a choice reader (reader/choice_reader.py) weighs in on boolean and enum slots
    choice_readers: int = 1  # with reads_choices: heads fitted alike from different seeds, averaged
    weighs_agreement: bool = False  # an agreement reader (reader/agreement_reader.py) weighs joint answers again with the surer ones
    weighs_values: bool = False  # a second one weighs joint integer and date answers again (decoding/value_agreement.py)
    value_agreement_readers: int = 1  # with weighs_values: heads fitted alike on their own draws of groups, averaged
    reads_across: bool = False  # a cross reader (reader/cross_reader.py) weighs in on boolean and enum slots
    cross_rank: int = 8  # with reads_across: the rank of its updates of the base encoder
    summary_from_marker: bool = False  # a question laid out with its own evidence is summed up by its marker's state, not its segment's mean
    answer_layers: bool = False  # the answer block runs layers of its own over the prefix as the frozen base encodes it

    @classmethod
    def from_name(cls, name: str) -> BlockDiffusionConfig:
        if name not in PRESETS:
            raise KeyError(f"unknown model preset {name!r}; known: {sorted(PRESETS)}")
        return cls(**PRESETS[name])

    @classmethod
    def from_dict(cls, data: dict) -> BlockDiffusionConfig:
        """The config a checkpoint's config.json records; retired knobs at their old default are dropped,
        while one that was on is a ValueError (this model would read the checkpoint differently)."""
        kept = dict(data)
        kept.setdefault("chooser_operations", COUNT)  # saved before counts: the operations before them
        for key, default in RETIRED.items():
            if kept.pop(key, default) != default:
                raise ValueError(f"trained with {key}={data[key]!r}, a knob since retired (see experiments/README.md)")
        return cls(**kept)

    def to_dict(self) -> dict:
        return asdict(self)


# Knobs retired from the model, at the value every checkpoint that still loads has: older config.json
# files record them (the bundled one included).
RETIRED: dict[str, object] = {"isolate_questions": False}

PRESETS: dict[str, dict] = {
    "minilm-l6": {},  # all-MiniLM-L6-v2 shape
    "tiny": dict(hidden=64, layers=2, heads=4, intermediate=128),  # tests and smoke runs
}


@dataclass
class PrefixState:
    """Per-layer keys and values of a padded batch of prefixes."""

    keys: list[torch.Tensor]  # each (B, H, T, D)
    values: list[torch.Tensor]  # each (B, H, T, D)
    mask: torch.Tensor  # (B, T) True on real tokens
    lengths: torch.Tensor  # (B,) real prefix lengths
    summaries: torch.Tensor | None = None  # (B, S + 1, C) mean last-layer state of each question's tokens
    block_start: torch.Tensor | None = None  # (B,) position of each row's first block token; None: `lengths`
    _packed: list | None = field(default=None, init=False, repr=False, compare=False)
    _joined: list | None = field(default=None, init=False, repr=False, compare=False)

    def packed(self) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Per layer (keys (N, H, D), values (N, H, D), cu_seqlens (B + 1,)) without padding, for the
        Triton block attention; built on first use, once per state."""
        if self._packed is None:
            self._packed = [pack_prefix(k, v, self.mask) for k, v in zip(self.keys, self.values)]
        return self._packed

    def joined(self, layer: int, block_k, block_v, block_mask):
        """This layer's prefix and block keys and values side by side, (B, H, T + L, D) each, and their
        mask (B, T + L), for inference: built once, then later steps of the same shape overwrite only
        the block's L rows in place instead of copying the whole prefix again."""
        if self._joined is None:
            self._joined = [None] * len(self.keys)
        t = self.keys[layer].shape[2]
        held = self._joined[layer]
        if held is None or held[0].shape[2] != t + block_k.shape[2]:
            held = (
                torch.cat([self.keys[layer], block_k], dim=2),
                torch.cat([self.values[layer], block_v], dim=2),
                torch.cat([self.mask, block_mask], dim=1),
            )
            self._joined[layer] = held
            return held
        keys, values, mask = held
        keys[:, :, t:] = block_k
        values[:, :, t:] = block_v
        mask[:, t:] = block_mask
        return held

    def select(self, rows) -> PrefixState:
        index = torch.as_tensor(list(rows), dtype=torch.long, device=self.mask.device)
        return PrefixState(
            [k.index_select(0, index) for k in self.keys],
            [v.index_select(0, index) for v in self.values],
            self.mask.index_select(0, index),
            self.lengths.index_select(0, index),
            None if self.summaries is None else self.summaries.index_select(0, index),
            None if self.block_start is None else self.block_start.index_select(0, index),
        )


class Embeddings(nn.Module):
    def __init__(self, cfg: BlockDiffusionConfig):
        super().__init__()
        self.word = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.position = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.segment = nn.Embedding(cfg.type_vocab, cfg.hidden)
        self.slot = nn.Embedding(cfg.max_slots + 1, cfg.hidden)
        self.norm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        nn.init.zeros_(self.slot.weight)  # starts as the pretrained encoder

    def forward(self, ids, positions, segment: int, slots=None):  # all (B, T); slots None: no slot term
        seg = torch.full_like(ids, segment)
        x = self.word(ids) + self.position(positions) + self.segment(seg)
        if slots is not None:
            x = x + self.slot(slots)
        return self.norm(x)


class Layer(nn.Module):
    """Post-norm transformer layer (BERT layout)."""

    def __init__(self, cfg: BlockDiffusionConfig):
        super().__init__()
        self.heads = cfg.heads
        self.query = nn.Linear(cfg.hidden, cfg.hidden)
        self.key = nn.Linear(cfg.hidden, cfg.hidden)
        self.value = nn.Linear(cfg.hidden, cfg.hidden)
        self.attn_out = nn.Linear(cfg.hidden, cfg.hidden)
        self.attn_norm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.ff_in = nn.Linear(cfg.hidden, cfg.intermediate)
        self.ff_out = nn.Linear(cfg.intermediate, cfg.hidden)
        self.ff_norm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)

    def split(self, x):  # (B, T, C) -> (B, H, T, D)
        b, t, c = x.shape
        return x.view(b, t, self.heads, c // self.heads).transpose(1, 2)

    def forward(self, x, keys, values, mask):
        """Prefix pass: x (B, T, C) attends to its own keys/values (B, H, T, D) where mask (B, T), or
        (B, T, T) per query token, allows; or, a `SegmentLayout`, within each question's segment."""
        q = self.split(self.query(x))
        if isinstance(mask, SegmentLayout):
            return self.finish(x, mask.attend(q, keys, values))
        allowed = mask[:, None, None, :] if mask.dim() == 2 else mask[:, None]
        return self.finish(x, F.scaled_dot_product_attention(q, keys, values, attn_mask=allowed))

    def block_forward(self, x, prefix: PrefixState, index: int, block_mask, packed=None):
        """Block pass: x (B, L, C) attends to layer `index` of the cached prefix and bidirectionally to
        itself; with `packed` (this layer's entry of `PrefixState.packed()`) through the Triton kernel."""
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        if packed is not None:
            return self.finish(x, block_attention_triton(q, *packed, k, v, block_mask))
        if torch.is_grad_enabled():  # training: no in-place buffers under autograd
            keys, values = prefix.keys[index], prefix.values[index]
            return self.finish(x, block_attention_fused(q, keys, values, prefix.mask, k, v, block_mask))
        keys, values, mask = prefix.joined(index, k, v, block_mask)
        return self.finish(x, F.scaled_dot_product_attention(q, keys, values, attn_mask=mask[:, None, None, :]))

    def finish(self, x, attn):  # attn (B, H, T, D) -> output (B, T, C)
        b, h, t, d = attn.shape
        x = self.attn_norm(x + self.attn_out(attn.transpose(1, 2).reshape(b, t, h * d)))
        return self.ff_norm(x + self.ff_out(F.gelu(self.ff_in(x))))


def question_summary_layer(hidden: int) -> nn.Linear:
    """The projection of a question's summary into its answer positions; zero at first, so adding it
    to a trained model changes nothing until training uses it."""
    layer = nn.Linear(hidden, hidden)
    nn.init.zeros_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


def segment_mask(slots, mask):
    """(B, T, T): a question's tokens see only their own question's tokens; the shared ones (slot 0,
    such as [CLS]) see everything, so what questions have in common reaches the answer block through
    them and never another question's reading. slots, mask: (B, T). The prefix pass attends this way
    through `SegmentLayout`, which gives the same result without building the mask."""
    same = slots[:, :, None] == slots[:, None, :]
    shared = (slots == 0)[:, :, None]
    return (same | shared) & mask[:, None, :]


def question_means(x, slots, mask, max_slots: int):
    """Mean of x (B, T, C) over each slot number's tokens: (B, S + 1, C); row 0 (no question) is zero."""
    member = F.one_hot(slots, max_slots + 1).to(x.dtype) * mask[..., None].to(x.dtype)  # (B, T, S + 1)
    member[..., 0] = 0
    sums = member.transpose(1, 2) @ x  # (B, S + 1, C)
    return sums / member.sum(dim=1)[..., None].clamp(min=1)


class BlockDiffusionModel(nn.Module):
    def __init__(self, cfg: BlockDiffusionConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = Embeddings(cfg)
        self.layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.layers))
        self.head_transform = nn.Linear(cfg.hidden, cfg.hidden)
        self.head_norm = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.head_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        self.question_summary = question_summary_layer(cfg.hidden) if cfg.question_summary else None
        self.span_pointer = None
        self.evidence_pointer = None  # fitted on gold evidence alone: orders what answers report, lays out nothing
        if cfg.points_at_spans:
            from ..reader.span_pointer import SpanPointer

            self.span_pointer = SpanPointer()
            if cfg.orders_evidence:
                self.evidence_pointer = SpanPointer()
        self.value_chooser = None
        self.generic_chooser = None  # answers where the value chooser is unsure (reader/fallback_chooser.py)
        if cfg.chooses_values:
            from ..reader.chooser_ensemble import value_chooser

            self.value_chooser = value_chooser(cfg.value_choosers, cfg.chooser_operations)
            if cfg.generic_choosers:
                self.generic_chooser = value_chooser(cfg.generic_choosers, cfg.chooser_operations)
        self.comparison_chooser = None
        if cfg.compares_values:
            from ..reader.comparison_chooser import ComparisonChooser

            self.comparison_chooser = ComparisonChooser(
                sides=cfg.comparer_sides, answers_alone=cfg.comparer_answers_alone
            )
        self.verdict_reader = None
        if cfg.reads_verdicts:
            from ..reader.verdict_reader import VerdictReader

            self.verdict_reader = VerdictReader(cfg.verdict_rank, cfg.verdict_wide)
        self.choice_reader = None
        if cfg.reads_choices:
            from ..reader.choice_reader import choice_reader

            self.choice_reader = choice_reader(cfg.choice_readers)
        self.agreement_reader = None
        if cfg.weighs_agreement:
            from ..reader.agreement_reader import AgreementReader

            self.agreement_reader = AgreementReader()
        self.value_agreement_reader = None
        if cfg.weighs_values:
            from ..training.value_agreement_fit import value_agreement_reader

            self.value_agreement_reader = value_agreement_reader(cfg.value_agreement_readers)
        self.cross_reader = None
        if cfg.reads_across:
            from ..reader.cross_reader import CrossReader

            self.cross_reader = CrossReader(cfg.cross_rank)
        self.answer_layers = None
        if cfg.answer_layers:
            self.answer_layers = nn.ModuleList(Layer(cfg) for _ in range(cfg.layers))
            # Per layer and slot, a vector added to the keys of that question's prefix tokens, so an
            # answer position can find its own question in a prefix encoded without slot numbers.
            self.slot_keys = nn.Parameter(torch.zeros(cfg.layers, cfg.max_slots + 1, cfg.hidden))

    def encode_prefix(self, ids, slots, mask, positions=None) -> PrefixState:
        """ids, slots, mask: (B, T) padded prefixes; returns every layer's keys and values.

        `positions` (B, T) gives each token's position where the prefix restarts them per question
        (laid out with its own evidence); None numbers the tokens 0, 1, 2, ..."""
        state = self.prefix_states(ids, slots, mask, positions)
        return state if self.answer_layers is None else self.answer_view(state, slots)

    def prefix_states(self, ids, slots, mask, positions=None) -> PrefixState:
        """The prefix pass itself; with `answer_layers` it depends on no trained weight (the base as
        it is, no slot numbers), so training computes it once per example and reuses it."""
        block_start = None
        if positions is None:
            positions = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        else:
            block_start = positions.masked_fill(~mask, 0).max(dim=1).values + 1
        x = self.embed(ids, positions, 0, None if self.answer_layers is not None else slots)
        # Questions that read only their own segment attend segment by segment, never through a (T, T) mask.
        seen = SegmentLayout.of(slots, mask) if self.cfg.segments_read_alone and block_start is not None else mask
        keys, values = [], []
        for layer in self.layers:
            k, v = layer.split(layer.key(x)), layer.split(layer.value(x))
            keys.append(k)
            values.append(v)
            x = layer(x, k, v, seen)
        summaries = None
        if self.question_summary is not None:
            pooled = mask
            if self.cfg.summary_from_marker and block_start is not None:  # each segment's first token: its marker
                pooled = mask & (positions == 1)
            summaries = question_means(x, slots, pooled, self.cfg.max_slots)
        return PrefixState(keys, values, mask, mask.sum(dim=1), summaries, block_start)

    def answer_view(self, state: PrefixState, slots) -> PrefixState:
        """`state` (from `prefix_states`) as the answer layers read it: each prefix token's keys plus
        its slot's learned vector, per layer; slots (B, T)."""
        member = F.one_hot(slots, self.cfg.max_slots + 1).to(self.slot_keys.dtype)  # (B, T, S + 1)
        # A matmul rather than a gather: its backward pass is another matmul, not a scatter.
        offsets = [layer.split(member @ self.slot_keys[i]) for i, layer in enumerate(self.layers)]
        keys = [k + offset for k, offset in zip(state.keys, offsets)]
        return PrefixState(keys, state.values, state.mask, state.lengths, state.summaries, state.block_start)

    def block_hidden(self, prefix: PrefixState, ids, slots, block_mask=None):
        """Hidden states (B, L, C) of the answer block; ids, slots: (B, L)."""
        if block_mask is None:
            block_mask = slots > 0
        offsets = torch.arange(ids.shape[1], device=ids.device)
        start = prefix.lengths if prefix.block_start is None else prefix.block_start
        positions = start[:, None] + offsets[None, :]  # block continues after each prefix
        positions = positions.clamp(max=self.cfg.max_positions - 1)  # only padding reaches past the end
        x = self.block_inputs(prefix, self.embed(ids, positions, 1, slots), slots)
        # The kernel has no backward pass, so training keeps the PyTorch path.
        triton = not torch.is_grad_enabled() and use_triton(x)
        layers = self.layers if self.answer_layers is None else self.answer_layers
        packed = prefix.packed() if triton else [None] * len(layers)
        for index, (layer, layer_packed) in enumerate(zip(layers, packed)):
            x = layer.block_forward(x, prefix, index, block_mask, layer_packed)
        return x

    def block_inputs(self, prefix: PrefixState, x, slots):
        """The block's embedded inputs x (B, L, C) plus what each position reads of its own question."""
        if prefix.summaries is not None:  # each position reads its own question, as read with the document
            x = x + self.question_summary(torch.gather(prefix.summaries, 1, slots[..., None].expand(-1, -1, x.shape[-1])))
        return x

    def logits(self, hidden, columns=None):  # (B, L, C) -> (B, L, V), or (B, L, len(columns))
        """Output logits, tied to the input embeddings; `columns` (K,) scores only those vocabulary ids."""
        h = self.head_norm(F.gelu(self.head_transform(hidden)))
        if columns is None:
            return h @ self.embed.word.weight.T + self.head_bias
        return h @ self.embed.word.weight[columns].T + self.head_bias[columns]

    def forward(self, prefix_ids, prefix_slots, prefix_mask, block_ids, block_slots, columns=None, prefix_positions=None):
        """Training entry: logits of the answer block (over `columns` when given), prefix encoded in the same pass."""
        prefix = self.encode_prefix(prefix_ids, prefix_slots, prefix_mask, prefix_positions)
        return self.logits(self.block_hidden(prefix, block_ids, block_slots), columns)
