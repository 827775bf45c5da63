"""The constrained block-diffusion denoising loop.

Each step runs one forward pass per open block; every masked position whose
constrained confidence reaches the threshold is committed, or the single most
confident one when none does (`sequential` blocks commit only their leftmost open
position). Positions left with a single allowed token are filled without a
forward pass, in every mode alike. Choice positions of grounded slots, scored by
the value and comparison choosers rather than the model, settle first by the same
rule in steps that need no forward pass, so the model answers the rest of a block
with those values in view; `max_steps` bounds the forward passes. A choice slot may carry
a bias per choice (the absence gate's), added to the model's logits of the tokens that
lead to it.

When no open choice is sure, the one forced in is the likeliest once the rules have their say: each
option is weighed by what committing it would leave the other slots, read through their choice
biases (`_forced_choice`), so an unsure value whose rules would force a linked answer the readers
think unlikely ("nothing owed", where that forces "gross misconduct found") gives way to one they
leave free.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from ..backends.protocol import DenoisingModel, PrefixInput
from ..kernels.constrained_confidence import allowed_bits, constrained_confidence, constrained_confidence_reference
from ..kernels.dispatch import use_triton
from .constraints import GroupConstraints
from .grounded_space import CHOICE_BASE, is_choice_token

FORCED_OPTIONS = 5  # per open choice position, the likeliest options weighed before one is forced in
ODDS_WEIGHT = 0.5  # the other slots' choice biases count at half their log-odds in that weighing


@dataclass
class GroupRun:
    """The decoding state of one request."""

    constraints: GroupConstraints
    threshold: float
    max_steps: int
    fixed_step: list[int | None] = field(default_factory=list)  # per slot
    log_confidence: list[float] = field(default_factory=list)  # per slot
    chosen: list[int] = field(default_factory=list)  # per slot: positions the model chose (not forced)
    block_of: list[Block] = field(default_factory=list)  # per slot

    def __post_init__(self):
        n = len(self.constraints.spaces)
        self.fixed_step = [None] * n
        self.log_confidence = [0.0] * n
        self.chosen = [0] * n
        self.block_of = [None] * n


@dataclass
class Block:
    """One answer block: some slots of a group behind one prefix."""

    group: GroupRun
    slots: list[int]  # group slot indices, in block order
    numbers: list[int]  # slot number (1-based) the model sees for each slot
    prefix: PrefixInput
    sequential: bool = False
    steps: int = 0  # denoising steps taken
    passes: int = 0  # steps whose logits needed a forward pass of the model (not only the value chooser's)
    positions: list[tuple[int, int]] = field(default_factory=list)  # (slot, position) per block position
    last_logits: torch.Tensor | None = None  # (L, C) of the last step, over `last_columns`
    last_columns: Columns | None = None
    pointed: dict[int, list] = field(default_factory=dict)  # slot number -> evidence a reading model points at

    def __post_init__(self):
        spaces = self.group.constraints.spaces
        self.positions = [(s, p) for s in self.slots for p in range(spaces[s].length)]
        self.read = [i for i, (s, p) in enumerate(self.positions) if p not in spaces[s].choice_positions]
        self._reads = set(self.read)
        self.biased = [i for i, (s, p) in enumerate(self.positions) if spaces[s].choice_bias is not None]
        for s in self.slots:
            self.group.block_of[s] = self

    def open_positions(self) -> list[int]:
        """Positions that are masked and may be committed now. Outside sequential blocks, while a choice
        position is open only choice positions are: the values the document gives settle first, and the
        model reads them when it answers the rest of the block."""
        c = self.group.constraints
        ready = [i for i, (s, p) in enumerate(self.positions) if c.is_ready(s, p)]
        if self.sequential:
            return ready
        choosing = [i for i in ready if i not in self._reads]
        return choosing or ready

    def allowed_tokens(self) -> set[int]:
        """Every token some open position of the block may still take."""
        c = self.group.constraints
        tokens: set[int] = set()
        for i in self.open_positions():
            s, p = self.positions[i]
            tokens.update(c.allowed(s)[p])
        return tokens

    def needs_model(self) -> bool:
        """Whether an open position takes its logits from the model (not a choice position)."""
        return any(i in self._reads for i in self.open_positions())


@dataclass(frozen=True)
class Columns:
    """The vocabulary ids a forward pass scored, in logit-column order.

    Confidence is renormalised over each position's allowed tokens, so only those need logits:
    scoring the union of allowed tokens gives the same decisions as the whole vocabulary.
    """

    token_ids: list[int]
    index: dict[int, int]

    @classmethod
    def of(cls, tokens: set[int]) -> Columns:
        ordered = sorted(tokens)
        return cls(ordered, {t: c for c, t in enumerate(ordered)})

    def tensor(self) -> torch.Tensor:
        return torch.tensor(self.token_ids, dtype=torch.long)


def _allowed_tensor(options: Sequence[Sequence[int]], columns: Columns) -> torch.Tensor:
    """Allowed tokens as logit columns (P, A), padded with -1."""
    width = max(len(o) for o in options)
    out = torch.full((len(options), width), -1, dtype=torch.long)
    for i, o in enumerate(options):
        out[i, : len(o)] = torch.tensor([columns.index[t] for t in o], dtype=torch.long)
    return out


def _confidence(logits: torch.Tensor, options: Sequence[Sequence[int]], columns: Columns) -> tuple[torch.Tensor, torch.Tensor]:
    """(confidence (P,), column (P,)) of logit rows (P, C) over `columns`, each renormalised over its options;
    the Triton kernel on CUDA, the PyTorch reference elsewhere."""
    allowed = _allowed_tensor(options, columns)
    if use_triton(logits):
        return constrained_confidence(logits, allowed_bits(allowed, logits.shape[1]).to(logits.device))
    return constrained_confidence_reference(logits, allowed.to(logits.device))


def _best(block: Block, logits: torch.Tensor, index: int, columns: Columns) -> tuple[float, int]:
    slot, position = block.positions[index]
    options = block.group.constraints.allowed(slot)[position]
    conf, column = _confidence(logits[index : index + 1], [options], columns)
    return float(conf[0]), columns.token_ids[int(column[0])]


def _note_done(group: GroupRun, slots: Sequence[int]) -> None:
    for s in slots:
        if group.fixed_step[s] is None and group.constraints.slot_done(s):
            group.fixed_step[s] = group.block_of[s].steps


def _commit(block: Block, index: int, token: int, confidence: float) -> None:
    group = block.group
    slot, position = block.positions[index]
    if not group.constraints.commit(slot, position, token):
        raise AssertionError("committed a token the constraints do not allow")
    group.log_confidence[slot] += math.log(max(confidence, 1e-30))
    group.chosen[slot] += 1
    forced = group.constraints.fill_forced()
    _note_done(group, [slot, *(s for s, _, _ in forced)])


def fill_forced(group: GroupRun) -> None:
    """Fix positions that only one token can fill (before any forward pass)."""
    forced = group.constraints.fill_forced()
    _note_done(group, [s for s, _, _ in forced])


def denoise_step(block: Block, logits: torch.Tensor, columns: Columns) -> int:
    """Commit positions of one block from its logits (L, C) over `columns`; returns how many the model chose."""
    block.steps += 1
    block.last_logits, block.last_columns = logits, columns
    open_ = block.open_positions()
    if block.sequential:
        conf, token = _best(block, logits, open_[0], columns)
        _commit(block, open_[0], token, conf)
        return 1
    c = block.group.constraints
    options = [c.allowed(block.positions[i][0])[block.positions[i][1]] for i in open_]
    conf, column = _confidence(logits[open_], options, columns)
    if float(conf.max()) < block.group.threshold and not any(i in block._reads for i in open_):
        picked = _forced_choice(block, logits, open_, options, columns)
        if picked is not None:
            index, token, confidence = picked
            _commit(block, index, token, confidence)
            return 1
    first = {i: (o, float(p), columns.token_ids[int(k)]) for i, o, p, k in zip(open_, options, conf.tolist(), column.tolist())}
    order = [open_[j] for j in torch.argsort(conf, descending=True, stable=True).tolist()]
    committed = 0
    for index in order:
        slot, position = block.positions[index]
        if not c.is_open(slot, position):
            continue  # filled as forced by an earlier commit of this step
        scored_options, confidence, token = first[index]
        if c.allowed(slot)[position] != scored_options:  # earlier commits narrowed its options: rescore
            confidence, token = _best(block, logits, index, columns)
        if committed == 0 or confidence >= block.group.threshold:
            _commit(block, index, token, confidence)
            committed += 1
    return committed


def _class_odds(space) -> list[float] | None:
    """A slot's probability per class before the model reads it, from its choice bias (the readers'
    and gates' log-odds, class i being choice i, counted at `ODDS_WEIGHT`); None without one."""
    bias = getattr(space, "choice_bias", None)
    if not bias or not any(bias):
        return None
    return torch.softmax(torch.tensor(bias, dtype=torch.float32) * ODDS_WEIGHT, dim=0).tolist()


def _forced_choice(
    block: Block, logits: torch.Tensor, open_: Sequence[int], options: Sequence[Sequence[int]], columns: Columns
) -> tuple[int, int, float] | None:
    """The choice to force in when no open choice is sure, as (position index, token, confidence):
    of each open choice position's `FORCED_OPTIONS` likeliest options, the one whose log-probability
    plus, for each other open slot with odds (`_class_odds`), the log of the share of them the rules
    would still allow, is highest. None where no open slot has odds (the surest goes in)."""
    c = block.group.constraints
    odds = {j: o for j, space in enumerate(c.spaces) if not c.slot_done(j) and (o := _class_odds(space)) is not None}
    if not odds:
        return None
    allowed_now = {j: sum(o[x] for x in c.supported[j] if x < len(o)) for j, o in odds.items()}  # before any commit
    best: tuple[float, int, int, float] | None = None
    for index, allowed in zip(open_, options):
        slot, position = block.positions[index]
        others = {j: o for j, o in odds.items() if j != slot}
        at = torch.tensor([columns.index[t] for t in allowed], dtype=torch.long, device=logits.device)
        probs = torch.softmax(logits[index, at].float(), dim=0).tolist()
        for k in sorted(range(len(allowed)), key=lambda k: -probs[k])[:FORCED_OPTIONS]:
            kept = c.supported_if(slot, position, allowed[k])
            score = math.log(max(probs[k], 1e-30))
            for j, o in others.items():
                after = sum(o[x] for x in kept[j] if x < len(o))
                if after < allowed_now[j]:
                    score += math.log(max(after, 1e-9) / allowed_now[j])
            if best is None or score > best[0]:
                best = (score, index, allowed[k], probs[k])
    return None if best is None else best[1:]


def finish_block(block: Block) -> None:
    """Complete a block that ran out of steps from its last logits, most confident first."""
    while open_ := block.open_positions():
        scored = [(_best(block, block.last_logits, i, block.last_columns), i) for i in open_]
        (confidence, token), index = max(scored, key=lambda item: item[0][0])
        _commit(block, index, token, confidence)


def block_tensors(blocks: Sequence[Block], mask_id: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Current tokens (B, L) of the positions the model reads, with the mask id on open ones, and
    1-based slot numbers (B, L)."""
    width = max(len(b.read) for b in blocks)
    ids = torch.full((len(blocks), width), pad_id, dtype=torch.long)
    numbers = torch.zeros((len(blocks), width), dtype=torch.long)
    for row, b in enumerate(blocks):
        patterns = b.group.constraints.patterns
        number_of = dict(zip(b.slots, b.numbers))
        for j, i in enumerate(b.read):
            s, p = b.positions[i]
            token = patterns[s][p]
            ids[row, j] = mask_id if token is None else token
            numbers[row, j] = number_of[s]
    return ids, numbers


def step_logits(model: DenoisingModel, cache, blocks: Sequence[Block], columns: Columns) -> torch.Tensor:
    """Logits (B, L, C) over `columns` for every position of each block: the model's where it reads
    the position, the value chooser's on choice positions, -inf on columns a position cannot take."""
    if all(len(b.read) == len(b.positions) for b in blocks):  # no grounded slot: the model scores everything
        ids, numbers = block_tensors(blocks, model.vocab.mask_id, model.vocab.pad_id)
        return _add_choice_bias(model.block_logits(cache, ids, numbers, columns.tensor()).float(), blocks, columns)
    width = max(len(b.positions) for b in blocks)
    read_columns = [c for c, t in enumerate(columns.token_ids) if not is_choice_token(t)]
    out = torch.full((len(blocks), width, len(columns.token_ids)), float("-inf"), device=model.device)
    if any(b.needs_model() for b in blocks):
        ids, numbers = block_tensors(blocks, model.vocab.mask_id, model.vocab.pad_id)
        token_ids = torch.tensor([columns.token_ids[c] for c in read_columns], dtype=torch.long)
        logits = model.block_logits(cache, ids, numbers, token_ids).float()  # (B, L', C')
        rows = torch.tensor(read_columns, device=out.device)
        for row, b in enumerate(blocks):
            at = torch.tensor(b.read, dtype=torch.long, device=out.device)
            out[row, at[:, None], rows] = logits[row, : len(b.read)].to(out.device)
        out = _add_choice_bias(out, blocks, columns)
    choice_columns = [(c, t - CHOICE_BASE) for c, t in enumerate(columns.token_ids) if is_choice_token(t)]
    if not choice_columns:
        return out
    column_at = torch.tensor([c for c, _ in choice_columns], dtype=torch.long)
    choice_at = torch.tensor([k for _, k in choice_columns], dtype=torch.long)
    for row, b in enumerate(blocks):
        spaces = b.group.constraints.spaces
        for i, (s, p) in enumerate(b.positions):
            if p in spaces[s].choice_positions:
                scores = spaces[s].choice_logits
                kept = choice_at < len(scores)
                out[row, i, column_at[kept]] = scores[choice_at[kept]].to(out)
    return out


def _add_choice_bias(logits: torch.Tensor, blocks: Sequence[Block], columns: Columns) -> torch.Tensor:
    """The logits (B, L, C) with each biased choice slot's per-token bias (its `token_bias`) added at its
    open positions (`logits` itself when no slot has one)."""
    added = None
    for row, b in enumerate(blocks):
        constraints = b.group.constraints
        for i in b.biased:
            s, p = b.positions[i]
            if not constraints.is_open(s, p):
                continue
            for token, bias in constraints.spaces[s].token_bias(constraints.patterns[s], p).items():
                column = columns.index.get(token)
                if column is not None:
                    if added is None:
                        added = torch.zeros(logits.shape, dtype=logits.dtype, device=logits.device)
                    added[row, i, column] += bias
    return logits if added is None else logits + added


def run_denoising(model: DenoisingModel, blocks: Sequence[Block]) -> None:
    """Decode every block to completion; blocks of many requests share each forward pass."""
    for group in {id(b.group): b.group for b in blocks}.values():
        fill_forced(group)
    live = [i for i, b in enumerate(blocks) if b.open_positions()]
    if not live:
        return
    cache = model.encode_prefix([blocks[i].prefix for i in live])
    if model.reads_documents:
        for i, found in zip(live, model.pointed_evidence(cache, [blocks[i].numbers for i in live])):
            blocks[i].pointed = found
    cached = list(live)  # block index of each cache row
    while True:
        active = [i for i in live if blocks[i].open_positions() and blocks[i].passes < blocks[i].group.max_steps]
        if not active:
            break
        if active != cached:  # compact the cache only when blocks finish, not every step
            row_of = {block_index: row for row, block_index in enumerate(cached)}
            cache, cached = cache.select([row_of[i] for i in active]), active
        columns = Columns.of(set().union(*(blocks[i].allowed_tokens() for i in active)))
        needed = [blocks[i].needs_model() for i in active]  # before this step's commits change what is open
        logits = step_logits(model, cache, [blocks[i] for i in active], columns)  # (B, L, C)
        for row, i in enumerate(active):
            if blocks[i].open_positions():  # another block of its group may have filled it
                blocks[i].passes += needed[row]
                denoise_step(blocks[i], logits[row, : len(blocks[i].positions)], columns)
    for i in live:
        if blocks[i].open_positions():
            finish_block(blocks[i])
