"""Several corpus files read as one corpus: ``--corpus`` repeated, a list of ``pathlib.Path`` in ``distill``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.errors import StStaticError
from st_static.extraction.corpus import CorpusError, CorpusFiles, corpus_digest, corpus_files, iter_sentences
from st_static.settings import BuildSettings

from .teachers import TINY_CORPUS, make_tiny_teacher

TINY = {"dim": 8, "min_sentences": 1, "steps": 8, "batch_size": 4, "eval_steps": 4, "pca_sample_size": 100}


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


def _halves(folder: Path) -> tuple[Path, Path, Path]:
    lines = TINY_CORPUS * 3
    first, second, joined = folder / "a.txt", folder / "b.txt", folder / "joined.txt"
    first.write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    second.write_text("\n".join(lines[20:]) + "\n", encoding="utf-8")
    joined.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return first, second, joined


def test_two_files_give_the_table_of_their_concatenation(teacher, tmp_path):
    first, second, joined = _halves(tmp_path)
    texts = ["the cat sat on the mat", "a red dog"]
    from_two = st_static.distill(str(teacher), [first, second], **TINY)
    from_one = st_static.distill(str(teacher), joined, **TINY)
    np.testing.assert_allclose(from_two.encode(texts), from_one.encode(texts), atol=1e-6)
    assert from_two[0].metadata.corpus == "a.txt, b.txt"


def test_each_file_keys_the_stages(teacher, tmp_path):
    first, second, _ = _halves(tmp_path)
    work = tmp_path / "work"
    st_static.distill(str(teacher), [first, second], work_dir=work, **TINY)
    second.write_text(second.read_text(encoding="utf-8") + "a new line about birds\n", encoding="utf-8")
    st_static.distill(str(teacher), [first, second], work_dir=work, **TINY)
    assert len(list(work.glob("extraction-*"))) == 2
    assert corpus_digest(CorpusFiles((first, second))) != corpus_digest(CorpusFiles((second, first)))


def test_the_cli_takes_corpus_more_than_once(tmp_path, monkeypatch):
    import st_static.pipeline.publish as build_module

    captured: dict[str, BuildSettings] = {}

    def fake_build(settings, out, **kwargs):
        captured["settings"] = settings
        raise StStaticError("stopped after reading the settings")

    monkeypatch.setattr(build_module, "build", fake_build)
    first, second, _ = _halves(tmp_path)
    arguments = ["build", "--out", str(tmp_path / "m"), "--corpus", str(first), "--corpus", str(second)]
    result = CliRunner().invoke(app, arguments)
    assert "stopped after reading the settings" in result.output
    assert captured["settings"].corpus == [str(first), str(second)]
    assert captured["settings"].inputs == [str(first), str(second)]


def test_every_file_is_checked_before_the_teacher_is_loaded(tmp_path):
    first, _, _ = _halves(tmp_path)
    missing = tmp_path / "missing.txt"
    result = CliRunner().invoke(
        app,
        [
            "build",
            "--teacher",
            "never-loaded",
            "--out",
            str(tmp_path / "m"),
            "--corpus",
            str(first),
            "--corpus",
            str(missing),
        ],
    )
    assert result.exit_code == 1
    assert "missing.txt does not exist" in result.output and "Traceback" not in result.output
    (tmp_path / "utf16.txt").write_bytes("hello there\n".encode("utf-16"))
    with pytest.raises(CorpusError, match="UTF-16"):
        st_static.distill("never-loaded", [first, tmp_path / "utf16.txt"])


def test_one_file_twice_and_file_names_as_sentences_are_refused(tmp_path):
    first, second, _ = _halves(tmp_path)
    with pytest.raises(CorpusError, match="given twice"):
        corpus_files([str(first), str(tmp_path / "." / "a.txt")])
    with pytest.raises(CorpusError, match=r"pathlib\.Path"):
        st_static.distill("never-loaded", [str(first), str(second)])
    assert list(iter_sentences(corpus_files([first, second]))) == [" ".join(line.split()) for line in TINY_CORPUS * 3]
    assert corpus_files([first]) == str(first)
