"""What the CLI says about itself and about a model: ``st-static info`` counts, ``extract --help`` options."""

from __future__ import annotations

import json

import pytest
import typer
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.cli.extract import NOT_EXTRACTED


def test_info_counts_words_apart_from_fallback_rows(fallback_module, tmp_path):
    folder = tmp_path / "m"
    st_static.save_model(SentenceTransformer(modules=[fallback_module, Normalize()], device="cpu"), folder)
    result = CliRunner().invoke(app, ["info", str(folder)])
    assert result.exit_code == 0, result.output
    described = json.loads(result.output)
    assert described["num_words"] == fallback_module.num_vocabulary_words
    assert described["num_fallback_rows"] == fallback_module.num_fallback_rows > 0
    assert described["num_rows"] == sum(described[key] for key in ("num_words", "num_piece_rows", "num_fallback_rows"))


def test_info_of_a_table_without_fallback_rows_counts_every_row_as_a_word(word_model, tmp_path):
    st_static.save_model(word_model, tmp_path / "m")
    described = json.loads(CliRunner().invoke(app, ["info", str(tmp_path / "m")]).output)
    assert described["num_fallback_rows"] == described["num_piece_rows"] == 0
    assert described["num_words"] == described["num_rows"] == word_model[0].num_words


def options_of(command: str) -> set[str]:
    """Every option name of a command, as click parses them (``--x`` and ``--no-x``)."""
    click_command = typer.main.get_command(app).commands[command]
    return {name for parameter in click_command.params for name in (*parameter.opts, *parameter.secondary_opts)}


@pytest.mark.parametrize("name", sorted(NOT_EXTRACTED))
def test_extract_offers_no_option_it_ignores(name):
    option = "--" + name.replace("_", "-")
    assert option in options_of("build")  # the build reads it
    assert option not in options_of("extract")
    assert "--no-" + name.replace("_", "-") not in options_of("extract")
