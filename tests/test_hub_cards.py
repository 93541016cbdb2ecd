"""The published cards cannot go stale: each renders, by today's code, from the facts its data block records."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

import pytest
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.model_card import EVALUATION_FILE_NAME

from .conftest import DESCRIBED_METADATA, REPO_ROOT

HUB_CARDS = Path(__file__).resolve().parents[1] / "hub_cards"
refresh = importlib.import_module("hub_cards.refresh")


@pytest.mark.parametrize("spec", refresh.SPECS, ids=lambda spec: spec.name)
def test_each_committed_card_is_what_today_s_code_renders_from_its_data_block(spec):
    committed = (HUB_CARDS / f"{spec.name}.md").read_text(encoding="utf-8")
    data = refresh.read_card_data(committed)
    assert data is not None, f"{spec.name}.md has no data block"
    assert refresh.render_card(spec, data) == committed, f"stale: run python hub_cards/refresh.py ({spec.name}.md)"


def test_every_card_has_a_spec_and_a_line_in_the_cards_readme():
    cards = {path.stem for path in HUB_CARDS.glob("swe-*.md")}
    assert cards == {spec.name for spec in refresh.SPECS}
    readme = (HUB_CARDS / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(swe-[^`]+)\.md` \|", readme, flags=re.MULTILINE))
    assert listed == cards


def test_the_main_table_s_card_has_its_speed_and_build_time():
    card = (HUB_CARDS / f"{refresh.MINILM_256.name}.md").read_text(encoding="utf-8")
    speed = card[card.index("## Speed") : card.index("## Evaluation")]
    assert re.search(r"\| this model \| [\d,]+ \|", speed) and "Measured on" in speed  # names the machine
    assert re.search(r"^Build time: \d+ min on .*\(extraction [\d,]+ s", card, flags=re.MULTILINE)


def test_the_thirteen_language_card_writes_each_language_s_pairs_from_the_registries_before_the_build():
    spec = refresh.E5_THIRTEEN_LANGUAGES
    commands = spec.commands("MODELS").splitlines()
    [build] = [line for line in commands if line.startswith("st-static build ")]
    for language, _ in refresh.THIRTEEN_LANGUAGES:
        sets = ("system", "extra", "everyday") if language in ("de", "ja", "zh") else ("everyday", "extra")
        for pair_set in sets:
            pairs = f"MODELS/en-{language}-{pair_set}.tsv"
            [line] = [
                line for line in commands if line.startswith(f"st-static pairs fetch {language} --set {pair_set} ")
            ]
            assert f"--out {pairs}" in line and "--exclude" not in line  # the command leaves out the bundled texts
            assert f"--parallel {language}={pairs}" in build
            assert commands.index(line) < commands.index(build)  # the pairs are written before the build reads them
    assert "--second-pass-pairs ja=MODELS/en-ja-games.tsv" in build and "--eval-data" not in build


def test_the_multilingual_cards_name_no_data_folder_outside_the_repository():
    for spec in (refresh.E5_FOUR_LANGUAGES_EXTRA, refresh.E5_THIRTEEN_LANGUAGES):
        commands = spec.commands("models")
        assert "../" not in commands and f"--data {refresh.BUNDLED_EVAL} " in commands
        card = (HUB_CARDS / f"{spec.name}.md").read_text(encoding="utf-8")
        reproduce = card[card.index("### Reproduce") : card.index("### Framework Versions")]
        assert "../shared" not in reproduce


def test_the_cards_tatoeba_languages_are_the_bundled_tatoeba_files():
    folder = REPO_ROOT / refresh.BUNDLED_EVAL / "tatoeba"
    codes = {path.name.removesuffix("-eng.tsv") for path in folder.glob("*-eng.tsv")}
    assert set(refresh.TATOEBA) == codes


def test_commands_fill_in_the_models_folder_and_keep_other_braces():
    assert refresh.in_models("awk '{print}' {models}/a.tsv > {models}/b.tsv", "M") == "awk '{print}' M/a.tsv > M/b.tsv"
    rendered = "\n".join(spec.commands("MODELS") for spec in refresh.SPECS)
    assert "{models}" not in rendered and "MODELS/" in rendered


def architecture(card: str) -> str:
    return re.search(r"### Full Model Architecture\n\n```\n(.*?)\n```", card, flags=re.DOTALL).group(1)


def test_the_build_s_card_and_st_static_card_write_the_same_architecture(fallback_model, tmp_path):
    folder = st_static.save_model(fallback_model, tmp_path / "model")  # what a build's publish step writes
    saved = architecture((folder / "README.md").read_text(encoding="utf-8"))
    assert "(empty_text): Dense" in saved  # the folder holds it: a bare SentenceTransformer(folder) runs it
    assert CliRunner().invoke(app, ["card", str(folder)]).exit_code == 0  # st-static card: from load_model
    assert architecture((folder / "README.md").read_text(encoding="utf-8")) == saved


def test_a_card_from_a_built_model_and_from_its_data_block_agree(word_module, tmp_path):
    word_module.metadata = json.loads(json.dumps(DESCRIBED_METADATA))
    model = SentenceTransformer(modules=[word_module, Normalize()], device="cpu")
    spec = refresh.SPECS[0]
    folder = st_static.save_model(model, tmp_path / "models" / spec.folder_name)
    evaluation = {"results": {"stsb-en-test": {"metric": "spearman", "score": 78.125, "kind": "sts"}}}
    (folder / EVALUATION_FILE_NAME).write_text(json.dumps(evaluation), encoding="utf-8")
    (folder / "stage_scores.json").write_text(json.dumps({"seconds": {"extraction": 90, "pca": 5}}), encoding="utf-8")
    out = tmp_path / "cards"
    assert refresh.main(["--models-dir", str(tmp_path / "models"), "--out-dir", str(out), "--only", spec.name]) == 0
    card = (out / f"{spec.name}.md").read_text(encoding="utf-8")
    data = refresh.read_card_data(card)
    assert data["evaluation"] == evaluation and data["model"]["vocabulary_words"] == word_module.num_vocabulary_words
    assert card.startswith((folder / "README.md").read_text(encoding="utf-8").rstrip("\n"))  # the folder's own card
    assert "Build time: 2 min on an unrecorded machine (extraction 90 s, PCA 5 s)." in card
    # Without the model, the block alone gives the same card; --check finds nothing stale.
    folder.rename(tmp_path / "elsewhere")
    assert refresh.render_card(spec, data) == card
    assert refresh.main(["--models-dir", str(tmp_path / "models"), "--out-dir", str(out), "--check"]) == 0
    (out / f"{spec.name}.md").write_text(card.replace("Build time", "Built in"), encoding="utf-8")
    assert refresh.main(["--models-dir", str(tmp_path / "models"), "--out-dir", str(out), "--check"]) == 1


def test_a_cross_lingual_card_names_each_text_file_once(word_module):
    from st_static.model_card import StaticModelCardData

    word_module.metadata = {
        "teacher": "intfloat/multilingual-e5-small",
        "languages": ["en", "de"],
        "corpus": "en-60k.txt, parallel/en-de.tsv, extra/en-de.tsv",  # how a cross-lingual build records its files
        "parallel": ["parallel/en-de.tsv", "extra/en-de.tsv"],
    }
    model = SentenceTransformer(modules=[word_module, Normalize()], device="cpu", model_card_data=StaticModelCardData())
    distilled_on = re.search(r"^- \*\*Distilled on:\*\* (.*)$", generate_card(model), flags=re.MULTILINE).group(1)
    assert distilled_on == "`en-60k.txt`, `parallel/en-de.tsv` (parallel), `extra/en-de.tsv` (parallel)"


def generate_card(model: SentenceTransformer) -> str:
    from st_static.model_card import render_model_card

    return render_model_card(model)
