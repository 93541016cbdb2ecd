"""The bundled evaluation bitext (Tatoeba and Tux Paint dev halves): shipped as package data, read by ``st-static
evaluate`` without ``--data`` and by a cross-lingual build without ``--eval-data``."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from typer.testing import CliRunner

from st_static import bundled
from st_static.cli import app
from st_static.errors import StStaticError
from st_static.evaluation.suite import find_tasks
from st_static.evaluation.translation import read_bitext_file

from .conftest import REPO_ROOT

TATOEBA = {"deu", "cmn", "jpn", "fra", "spa"}
TUX_PAINT = {"ara", "ces", "cmn", "deu", "fin", "fra", "hun", "ind", "ita", "jpn", "kor", "nld", "pol", "por"}
TUX_PAINT |= {"rus", "spa", "swe", "tur", "ukr", "vie"}


def test_the_bundled_bitext_files_are_package_data_of_the_expected_size() -> None:
    data = bundled.DEFAULT_EVAL_DATA
    assert {path.name.removesuffix("-eng.tsv") for path in (data / "tatoeba").glob("*.tsv")} == TATOEBA
    assert {path.name.removesuffix("-eng.tsv") for path in (data / "xling" / "tuxpaint").glob("*.tsv")} == TUX_PAINT
    for path in [*(data / "tatoeba").glob("*.tsv"), *(data / "xling" / "tuxpaint").glob("*.tsv")]:
        expected = 500 if path.parent.name == "tatoeba" else 400
        assert len(read_bitext_file(path)) == expected, path
    patterns = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    listed = patterns["package-data"]["st_static"]
    assert {"bundled/eval/tatoeba/*.tsv", "bundled/eval/xling/tuxpaint/*.tsv"} <= set(listed)
    assert "extraction/xlmr_nmt_nfkc_charsmap.bin.xz" in listed
    names = {task.name for task in find_tasks(data, task_files=False)}
    assert {f"tatoeba-{code}-eng" for code in TATOEBA} | {f"tuxpaint-{code}-eng" for code in TUX_PAINT} <= names
    notice = (data.parent / "NOTICE.md").read_text(encoding="utf-8")
    assert "CC BY 2.0 FR" in notice and "tuxpaint-stamps-default 2022.06.04-1" in notice and "GPL-2+" in notice


def test_evaluate_without_data_scores_the_bundled_files_of_the_model_s_languages(word_model, tmp_path) -> None:
    from st_static import load_model, save_model

    folder = save_model(word_model, tmp_path / "model")
    model = load_model(folder)
    model[0].metadata.languages = ["en", "de"]  # as a cross-lingual build records them
    save_model(model, folder)
    result = CliRunner().invoke(app, ["evaluate", str(folder), "--json", str(tmp_path / "evaluation.json")])
    assert result.exit_code == 0, result.output
    assert "No --data: scoring the bundled files" in result.output
    results = json.loads((tmp_path / "evaluation.json").read_text(encoding="utf-8"))["results"]
    assert set(results) == {"stsb-en-dev", "stsb-en-test", "tatoeba-deu-eng", "tuxpaint-deu-eng"}


def test_a_cross_lingual_build_without_eval_data_scores_the_bundled_files_of_its_languages(tmp_path, monkeypatch):
    import st_static.evaluation.suite as suite
    import st_static.pipeline.publish as publish

    asked: list[tuple[Path, object, object]] = []

    def fake_evaluator(data_dir, tasks=None, prompt=None, languages=None):
        asked.append((Path(data_dir), tasks, languages))
        return lambda model: {}

    def fake_build(settings, out, **kwargs):
        raise StStaticError("stopped after the evaluator")

    monkeypatch.setattr(suite, "task_evaluator", fake_evaluator)
    monkeypatch.setattr(publish, "build", fake_build)
    pairs = tmp_path / "en-de.tsv"
    pairs.write_text("en\tother\nthe cat sat\tdie Katze sass\n", encoding="utf-8")
    arguments = ["build", "--parallel", f"de={pairs}", "--languages", "en,de", "--out", str(tmp_path / "m")]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1 and "stopped after the evaluator" in result.output
    assert "Scores: the bundled STS-B English, Tatoeba and Tux Paint dev files of its languages." in result.output
    assert asked == [(bundled.DEFAULT_EVAL_DATA, None, ["en", "de"])]
