"""What every fit on ContractNLI through a span pointer's checkpoint (`fit-gate`, `fit-verdict`) must say
of input it cannot use, checked alike for each."""

from __future__ import annotations

from decision_engine.cli import main


def check_names_what_it_cannot_use(command: str, tmp_path, capsys) -> list[str]:
    """`command` onto a checkpoint without a span pointer: a missing ContractNLI file and the missing
    pointer are each named, with exit 2. Returns the arguments up to the ContractNLI path, for more checks."""
    from decision_engine.model.loader import random_model, save_checkpoint
    from decision_engine.model.transformer import BlockDiffusionConfig

    save_checkpoint(random_model(BlockDiffusionConfig.from_name("tiny")), tmp_path / "plain", "plain")
    args = [command, "--model", str(tmp_path / "plain"), "--out", str(tmp_path / "o"), "--contractnli"]
    assert main([*args, str(tmp_path / "x.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    (tmp_path / "bad.json").write_text("{}")
    assert main([*args, str(tmp_path / "bad.json")]) == 2
    assert "no span pointer" in capsys.readouterr().err
    return args
