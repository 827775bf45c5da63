"""Probe: do the frozen base encoder's states of a mention, read together with the question and the
evidence laid beside it, tell the value choosers something new?

    python experiments/probes/question_conditioned_mentions.py extract train.jsonl train.pt
    python experiments/probes/question_conditioned_mentions.py extract validation.jsonl validation.pt
    python experiments/probes/question_conditioned_mentions.py fit train.pt validation.pt [epochs] [dropout] [lr] [weight_decay] [linear]
    python experiments/probes/question_conditioned_mentions.py zero-shift validation.pt ...

`extract` lays each group out with the bundled model and keeps, per grounded integer or date slot,
the choosers' logits and, for every operand mention inside that question's evidence, the mean
last-layer state of its tokens and of the 6 tokens on each side, as the base encoder reads
"question [SEP] evidence" (320 tokens at most). `fit` trains a residual scorer added to the choosers'
logits (per operation and operand role a linear form over those states, plus a rank-32 bilinear
form with the [CLS] state; `linear` 0 keeps only the bilinear one) and prints held-out top-1 against
the choosers' own after each epoch. `zero-shift` prints the integer slots' top-1 when the "zero"
candidate's logit is lowered by 0 to 2.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import torch
from torch import nn

from decision_engine.grounding.candidates import OPERATIONS

WIDTH = 2 * 384  # a mention's own tokens, then the tokens around it
CONTEXT = 6  # tokens on each side read as "around"
RANK = 32


def extract(path: str, out: str) -> None:
    from decision_engine.decoding.grounded_space import GroundedSpace
    from decision_engine.evaluation import load_groups
    from decision_engine.factory import build_engine
    from decision_engine.kinds import same_answer
    from decision_engine.options import EngineOptions
    from decision_engine.precision import computing_in
    from decision_engine.validation import request_from_object

    engine = build_engine(EngineOptions())
    embedder = engine.context.embedder
    embedder._load()
    items = []
    for g in load_groups(Path(path), "jsonl"):
        request = request_from_object({k: v for k, v in g.request_line.items() if k not in ("labels", "evidence")})
        document = request.document.text
        layout = engine.prepare(request, "joint")
        for i, q in enumerate(request.questions):
            space = layout.group.constraints.spaces[i]
            if not isinstance(space, GroundedSpace) or q.schema.type not in ("integer", "string"):
                continue
            golds = [j for j, v in enumerate(space.values) if same_answer(q.schema, v, g.labels.get(q.id))]
            pieces, text = [], ""  # (where in `text`, document start, document end)
            for a, b in sorted(layout.shown_ranges[i]):
                text += " " if text else ""
                pieces.append((len(text), a, b))
                text += document[a:b]
            encoded = embedder._tokenizer(q.text, text, truncation="only_second", max_length=320,
                                          return_offsets_mapping=True, return_tensors="pt")
            which = encoded.sequence_ids(0)
            offsets = encoded["offset_mapping"][0].tolist()
            with torch.inference_mode(), computing_in(embedder.dtype, embedder.device):
                states = embedder._model(input_ids=encoded["input_ids"],
                                         attention_mask=encoded["attention_mask"]).last_hidden_state[0].float()

            def in_text(c: int):
                return next((at + c - a for at, a, b in pieces if a <= c <= b), None)

            vectors = {}
            for j in sorted({o for c in space.candidates for o in c.operands}):
                m = space.mentions[j]
                s, e = in_text(m.start), in_text(m.end)
                if s is None or e is None:
                    continue
                own = [t for t, (a, b) in enumerate(offsets) if which[t] == 1 and b > a and a < e and b > s]
                if not own:
                    continue
                around = [t for t in range(max(own[0] - CONTEXT, 0), min(own[-1] + CONTEXT + 1, len(offsets)))
                          if which[t] == 1 and t not in own]
                near = states[around].mean(0) if around else torch.zeros(384)
                vectors[j] = torch.cat([states[own].mean(0), near]).half()
            items.append(dict(type=q.schema.type, base=space.choice_logits.float(), golds=golds,
                              ops=[c.operation for c in space.candidates],
                              operands=[list(c.operands) for c in space.candidates], cls=states[0].half(), vec=vectors))
    torch.save(items, out)
    print(f"{len(items)} grounded integer and date slots -> {out}")


def _packed(item: dict) -> dict:
    used = sorted(item["vec"])
    row = {j: r for r, j in enumerate(used)}
    vectors = torch.cat([torch.stack([item["vec"][j].float() for j in used]) if used else torch.zeros(0, WIDTH),
                         torch.zeros(1, WIDTH)])  # the last row stands for a mention outside the evidence
    k = len(item["ops"])
    index, missing = torch.full((k, 4), -1, dtype=torch.long), torch.zeros(k, 4)
    for c, operands in enumerate(item["operands"]):
        for r, j in enumerate(operands[:4]):
            index[c, r] = row.get(j, len(used))
            missing[c, r] = float(j not in row)
    operation = torch.tensor([OPERATIONS.index(o) for o in item["ops"]])
    return dict(V=vectors, index=index, missing=missing, operation=operation, base=item["base"],
                golds=item["golds"], cls=item["cls"].float(), type=item["type"])


class Residual(nn.Module):
    def __init__(self, dropout: float, linear: bool):
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.linear = linear
        self.forms = nn.Parameter(torch.zeros(len(OPERATIONS), 2, WIDTH))
        self.outside = nn.Parameter(torch.zeros(len(OPERATIONS), 2))
        self.question = nn.Linear(384, RANK)
        self.mention = nn.Linear(WIDTH, RANK)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: dict) -> torch.Tensor:
        v = self.drop(self.norm(x["V"]))
        per_role = v @ self.forms.view(-1, WIDTH).T * float(self.linear)  # (M + 1, operations * 2)
        paired = self.mention(v) @ self.question(x["cls"])  # (M + 1,)
        role = torch.tensor([0, 1, 1, 1])
        column = x["operation"][:, None] * 2 + role[None, :]
        index = x["index"].clamp(min=0)
        term = per_role[index, column] + paired[index] + self.outside.view(-1)[column] * x["missing"]
        added = (term * (x["index"] >= 0)).sum(1)
        base = x["base"]
        finite = torch.isfinite(base[:-1])
        body = torch.where(finite, base[:-1].masked_fill(~finite, 0) + added, torch.full_like(added, -1e9))
        return torch.cat([body, base[-1:]])


def fit(train: str, held_out: str, epochs=12, dropout=0.3, lr=1e-3, weight_decay=0.05, linear=1) -> None:
    torch.manual_seed(0)
    random.seed(0)
    examples = [_packed(i) for i in torch.load(train) if i["golds"]]
    tests = [_packed(i) for i in torch.load(held_out)]
    model = Residual(float(dropout), bool(int(linear)))
    optimiser = torch.optim.AdamW(model.parameters(), lr=float(lr), weight_decay=float(weight_decay))
    for epoch in range(int(epochs)):
        model.train()
        random.shuffle(examples)
        total = 0.0
        for x in examples:
            loss = -torch.logsumexp(model(x).log_softmax(-1)[x["golds"]], 0)
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item()
        model.eval()
        with torch.no_grad():
            base = sum(int(x["base"].argmax()) in x["golds"] for x in tests)
            probe = sum(int(model(x).argmax()) in x["golds"] for x in tests)
        print(f"epoch {epoch + 1}: training loss {total / len(examples):.3f}, held out top-1 {probe}/{len(tests)} (choosers {base})")


def zero_shift(*paths: str) -> None:
    for path in paths:
        items = [i for i in torch.load(path) if i["type"] == "integer"]
        row = []
        for shift in (0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0):
            right = 0
            for item in items:
                logits = item["base"].clone()
                logits[[k for k, o in enumerate(item["ops"]) if o == "zero"]] -= shift
                right += int(logits.argmax()) in item["golds"]
            row.append(f"{shift}: {right}")
        print(f"{path} ({len(items)} integer slots) top-1 by shift: " + ", ".join(row))


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {"extract": extract, "fit": fit, "zero-shift": zero_shift}[command](*args)
