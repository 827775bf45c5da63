"""The package's layers: the core never imports the REST service, and requests are laid out by one function."""

from __future__ import annotations

import ast
from pathlib import Path

import decision_engine
from decision_engine.decoding.layout import LeadingContext, lay_out
from decision_engine.engine import DecisionEngine
from decision_engine.types import AnswerSchema, DecisionRequest, Document, Question

PACKAGE = Path(decision_engine.__file__).resolve().parent
# Web handlers the service mounts and feeds its dependencies: the one place outside service/ that may import it.
MOUNTED_BY_THE_SERVICE = {"dashboard/routes.py"}


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, relative imports resolved against its package."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_no_module_outside_the_service_imports_it():
    core = [
        p for p in PACKAGE.rglob("*.py")
        if "service" not in p.relative_to(PACKAGE).parts and p.relative_to(PACKAGE).as_posix() not in MOUNTED_BY_THE_SERVICE
    ]
    assert len(core) > 50  # the walk found the package
    offenders = {
        str(p.relative_to(PACKAGE)): sorted(m for m in _imported_modules(p) if m.startswith("decision_engine.service"))
        for p in core
    }
    assert {path: mods for path, mods in offenders.items() if mods} == {}


def test_the_import_walk_sees_relative_imports_of_the_service():
    app = _imported_modules(PACKAGE / "service" / "app.py")
    assert "decision_engine.service.batcher" in app and "decision_engine.engine" in app


def test_serve_is_still_a_subcommand():
    from decision_engine.cli import build_parser

    assert build_parser().parse_args(["serve", "--port", "9"]).port == 9


def test_layout_only_model_is_gone():
    from decision_engine.training import preparation

    assert not hasattr(preparation, "LayoutOnlyModel")
    assert not [p for p in PACKAGE.rglob("*.py") if "LayoutOnlyModel" in p.read_text()]


def test_the_engine_lays_out_with_the_pure_layout_function(vocab, tiny_backend):
    questions = [
        Question(id="a", text="Was notice given?", schema=AnswerSchema(type="boolean")),
        Question(id="b", text="How many days?", schema=AnswerSchema(type="integer", minimum=0, maximum=99)),
    ]
    request = DecisionRequest(document=Document(text="Notice was given twenty days before. " * 40), questions=questions)
    for mode in ("joint", "independent"):
        engine = DecisionEngine(tiny_backend)
        by_engine = engine.prepare(request, mode)
        pure = lay_out(request, mode, vocab, LeadingContext(vocab), tiny_backend.max_positions, context_tokens=64)
        assert [b.prefix for b in by_engine.blocks] != [b.prefix for b in pure.blocks]  # the cap of 64 tokens bites
        uncapped = lay_out(request, mode, vocab, LeadingContext(vocab), tiny_backend.max_positions)
        assert [b.prefix for b in by_engine.blocks] == [b.prefix for b in uncapped.blocks]
        assert by_engine.shown_ranges == uncapped.shown_ranges


def test_transformers_model_code_imports_from_the_repository_root():
    """The repository's top-level `kernels/` folder installs as `decision_engine.kernels`, but from a
    checkout's root it is importable as `kernels` too; transformers must not need a package of that name."""
    import subprocess
    import sys

    root = PACKAGE.parent
    run = subprocess.run(
        [sys.executable, "-c", "import transformers.activations"], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, f"importing transformers' model code from {root} fails:\n{run.stderr[-2000:]}"
