"""The README's code blocks and a folder to run them in, for ``tests/test_readme.py`` and ``tests/test_clients.py``.

A block runs as written, in a working folder laid out like the repository's surroundings: ``models/swe-minilm-256``
is a small built model (the fixtures' words, with fallback rows), ``st_static/bundled/eval`` the bundled STS-B files
in small and ``../shared/data`` a tiny data folder. Its first
line may mark it:

- ``# not run in CI: why``: the block is only checked (commands, options and Python names exist);
- ``# needs: module``: a client library's recipe, run after the section's first block (which defines ``PATH``,
  ``model``, ``texts``) where the module is installed (the clients' venv, ``scripts/test_clients.sh``).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from st_static import StaticWordAverage, save_model

from .conftest import WORDS, teacher_like_tokenizer, with_fallback

REPO_ROOT = Path(__file__).resolve().parents[1]
README = REPO_ROOT / "README.md"
MODEL_PATH = "models/swe-minilm-256"
"""The folder the README's code loads: the main command's output."""

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
NOT_RUN = "# not run in CI:"
NEEDS = "# needs:"


@dataclass(frozen=True)
class Block:
    """One fenced code block of a markdown file."""

    language: str
    code: str
    line: int
    """The line of the opening fence (1-based)."""

    @property
    def first_line(self) -> str:
        return self.code.splitlines()[0].strip() if self.code.strip() else ""

    @property
    def not_run(self) -> bool:
        return self.first_line.startswith(NOT_RUN)

    @property
    def needs(self) -> str | None:
        return self.first_line.removeprefix(NEEDS).strip() if self.first_line.startswith(NEEDS) else None

    @property
    def name(self) -> str:
        return f"{self.language}-line-{self.line}"


def code_blocks(path: Path = README, languages: tuple[str, ...] = ("python", "bash")) -> list[Block]:
    """The fenced blocks of ``path`` in these languages, in file order."""
    text = path.read_text(encoding="utf-8")
    return [
        Block(match.group(1), match.group(2), text.count("\n", 0, match.start()) + 1)
        for match in _FENCE.finditer(text)
        if match.group(1) in languages
    ]


def client_recipes(path: Path = README) -> list[tuple[Block, Block]]:
    """Each client recipe (a ``# needs:`` block) with the block that starts its section (``PATH``, ``model``...)."""
    blocks = code_blocks(path, ("python",))
    recipes = []
    for index, block in enumerate(blocks):
        if block.needs:
            start = next(earlier for earlier in reversed(blocks[:index]) if not earlier.needs)
            recipes.append((start, block))
    return recipes


def shell_commands(code: str) -> list[list[str]]:
    """The commands of a bash block: continuation lines joined, comments dropped, ``&&`` chains split."""
    joined = code.replace("\\\n", " ")
    commands = []
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if ">" in words:  # a redirection: the command before it
                words = words[: words.index(">")]
            if words:
                commands.append(words)
    return commands


def st_static_arguments(words: list[str]) -> list[str] | None:
    """The arguments after ``st-static`` (``.venv/bin/st-static``, ``python -m st_static.cli``), or ``None``."""
    if words and Path(words[0]).name == "st-static":
        return words[1:]
    if len(words) > 2 and words[1:3] == ["-m", "st_static.cli"]:
        return words[3:]
    return None


STS_ROWS = [
    ("the cat sat on the mat", "the cat sat", 4.0),
    ("hello world", "hello word", 3.5),
    ("the mat", "a token", 0.5),
    ("tokenise the word", "the token", 2.0),
    ("café 12", "the 1990s", 1.0),
    ("the cat", "the cat on the mat", 3.0),
]


def make_workspace(root: Path) -> Path:
    """``root/work`` (the README's current folder) with ``models/swe-minilm-256`` and ``root/shared/data``."""
    vectors = np.random.default_rng(0).standard_normal((len(WORDS), 16)).astype(np.float32)
    module = with_fallback(
        StaticWordAverage.from_word_vectors(WORDS, vectors, teacher_tokenizer=teacher_like_tokenizer())
    )
    module.metadata = {"teacher": "sentence-transformers/all-MiniLM-L6-v2", "teacher_dim": 384, "languages": ["en"]}
    work = root / "work"
    save_model(SentenceTransformer(modules=[module, Normalize()], device="cpu"), work / MODEL_PATH)
    sts = root / "shared" / "data" / "sts"
    sts.mkdir(parents=True)
    rows = "".join(f"{first}\t{second}\t{score}\n" for first, second, score in STS_ROWS)
    (sts / "stsb-en-dev.tsv").write_text("sentence1\tsentence2\tscore\n" + rows, encoding="utf-8")
    (root / "shared" / "data" / "README.md").write_text(json.dumps("a tiny stand-in"), encoding="utf-8")
    corpus = root / "shared" / "data" / "corpus"
    corpus.mkdir()
    lines = [first for first, _, _ in STS_ROWS] + [second for _, second, _ in STS_ROWS] + [STS_ROWS[0][0]]
    (corpus / "en.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    bundled = work / "st_static" / "bundled" / "eval" / "sts"  # the repository's bundled STS-B files, in small
    bundled.mkdir(parents=True)
    for name in ("stsb-en-dev.tsv", "stsb-en-test.tsv"):  # the embed and dedup recipe's input: one sentence twice
        (bundled / name).write_text("sentence1\tsentence2\tscore\n" + rows + f"{lines[0]}\t{lines[1]}\t1.0\n", "utf-8")
    return work
