"""Model cards: built from metadata and evaluation.json, extending ST's card, regenerated on every save."""

from __future__ import annotations

import importlib
import json
import re
import tempfile
from pathlib import Path

import pytest
import torch
import yaml
from sentence_transformers.sentence_transformer.model_card import SentenceTransformerModelCardData
from typer.testing import CliRunner

import st_static
from st_static.cli import app
from st_static.model.save_load import load_model, save_model
from st_static.model_card import (
    EVALUATION_FILE_NAME,
    EvaluationFileError,
    StaticModelCardData,
    card_weights_sha256,
    compose_template,
    describe_teacher,
    evaluation_table_differences,
    file_sha256,
    parse_evaluation_table,
    read_evaluation,
    read_sections,
    render_evaluation_table,
    render_model_card,
)
from st_static.model_card.speed import measure_speed

from .conftest import DESCRIBED_METADATA

EVALUATION = {
    "model": "m",
    "results": {
        "stsb-en-test": {"metric": "spearman", "score": 78.1234},
        "sick-dev": {"metric": "spearman", "score": 65.0},
    },
    "versions": {"st_static": "0.1.0"},
}


def card_yaml(card: str) -> dict:
    return yaml.safe_load(card.split("---\n")[1])


def save_with_evaluation(model, folder: Path, evaluation: dict | None = EVALUATION) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    if evaluation is not None:
        (folder / EVALUATION_FILE_NAME).write_text(json.dumps(evaluation), encoding="utf-8")
    model.save_pretrained(str(folder))
    return (folder / "README.md").read_text(encoding="utf-8")


def test_card_is_built_from_metadata_and_evaluation(described_model, tmp_path):
    card = save_with_evaluation(described_model, tmp_path / "model")
    header = card_yaml(card)
    assert header["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert header["language"] == ["en"]
    assert header["license"] == "apache-2.0"  # the teacher's
    assert "static-embeddings" in header["tags"] and "loss:SimilarityDistillationLoss" in header["tags"]
    scores = {
        result["dataset"]["type"]: result["metrics"][0]["value"] for result in header["model-index"][0]["results"]
    }
    assert scores == {"stsb-en-test": 78.1234, "sick-dev": 65.0}
    assert "(https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2)" in card
    assert f"{len(described_model[0].vocabulary)} words" in card
    assert "384 dimensions" in card  # teacher_dim
    for stage in ("Extraction", "PCA with All-But-The-Top", "Similarity distillation"):
        assert f"**{stage}.**" in card
    assert "the first 3 component(s) removed" in card and "next 16 kept" in card
    assert "| learning_rate | 0.001 |" in card
    assert "| this model | 123,457 |" in card and "a 2-core test machine" in card
    assert DESCRIBED_METADATA["build_command"] in card
    assert parse_evaluation_table(card) == {"stsb-en-test": ("spearman", "78.12"), "sick-dev": ("spearman", "65.00")}
    assert "@inproceedings{wada-etal-2025-static" in card and "reimers-2019-sentence-bert" in card
    assert "`corpus/en.txt`: licence not recorded, check it." in card  # no licence guessed from a file name


def test_card_keeps_sentence_transformers_sections(described_model, tmp_path):
    card = save_with_evaluation(described_model, tmp_path / "model", evaluation=None)
    for section in (
        "## Model Details",
        "### Full Model Architecture",
        "### Direct Usage (Sentence Transformers)",
        "### Framework Versions",
        "## Citation",
    ):
        assert card.count(section) == 1, section
    for section in ("## Speed", "## Bias, Risks and Limitations", "### Method", "### Reproduce", "## Licence"):
        assert card.count(section) == 1, section
    assert "StaticWordAverage(num_words=14, embedding_dim=16" in card  # ST's architecture block
    assert "pip install sentence-transformers" in card
    assert 'SentenceTransformer("sentence_transformers_model_id")' in card
    assert "trust_remote_code=True" not in card
    assert "word order" in card and "negation" in card and "Out-of-vocabulary" in card and "long" in card
    assert parse_evaluation_table(card) is None  # no evaluation.json, no table


def test_card_is_regenerated_on_save(described_model, tmp_path):
    first = save_with_evaluation(described_model, tmp_path / "model", evaluation=None)
    module = described_model[0]
    module.metadata.teacher = "intfloat/multilingual-e5-small"
    module.metadata.languages = ["en", "de"]
    module.metadata.stages = ["extraction", "pca", "contrastive"]
    with torch.no_grad():
        module.embedding.weight.mul_(2.0)
    second = save_with_evaluation(described_model, tmp_path / "model", evaluation=None)
    assert first != second
    assert "intfloat/multilingual-e5-small" not in first
    assert card_yaml(second)["base_model"] == "intfloat/multilingual-e5-small"
    assert card_yaml(second)["language"] == ["en", "de"]
    assert card_yaml(second)["license"] == "mit"
    assert "# Static word embeddings distilled from multilingual-e5-small (16 dimensions, en-de)" in second
    assert "**Bilingual contrastive learning.**" in second and "Similarity distillation" not in second
    assert card_weights_sha256(second) == file_sha256(tmp_path / "model" / "model.safetensors")
    assert card_weights_sha256(first) != card_weights_sha256(second)


def test_explicit_card_fields_win_over_metadata(described_model, tmp_path):
    described_model.model_card_data.license = "cc-by-4.0"
    described_model.model_card_data.model_name = "My static model"
    card = save_with_evaluation(described_model, tmp_path / "model", evaluation=None)
    assert card_yaml(card)["license"] == "cc-by-4.0"
    assert card.count("# My static model") == 1


def test_loaded_model_regenerates_its_card_instead_of_copying_it(described_model, tmp_path):
    save_model(described_model, tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    assert isinstance(loaded.model_card_data, StaticModelCardData)
    loaded[0].metadata.teacher = "sentence-transformers/all-mpnet-base-v2"
    loaded.save_pretrained(str(tmp_path / "model"))
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    assert card_yaml(card)["base_model"] == "sentence-transformers/all-mpnet-base-v2"


def test_save_model_gives_a_plain_model_the_static_card(word_model, tmp_path):
    word_model.model_card_data.language = ["en"]
    word_model[0].metadata = {"teacher": "/somewhere/teachers/all-mpnet-base-v2/", "stages": ["extraction"]}
    assert type(word_model.model_card_data) is SentenceTransformerModelCardData
    save_model(word_model, tmp_path / "model")
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    assert isinstance(word_model.model_card_data, StaticModelCardData)
    assert card_yaml(card)["language"] == ["en"]  # set by the user before, kept
    assert {"sentence-transformers", "static-embeddings", "st-static"} <= set(card_yaml(card)["tags"])
    assert card_yaml(card)["base_model"] == "sentence-transformers/all-mpnet-base-v2"  # known local teacher folder
    assert "**Extraction.**" in card


def test_card_without_metadata_says_what_is_unknown(word_model, tmp_path):
    save_model(word_model, tmp_path / "model")
    card = (tmp_path / "model" / "README.md").read_text(encoding="utf-8")
    assert "teacher not recorded" in card
    assert "The build command was not recorded" in card
    assert "Not measured for this model." in card
    assert "license" not in card_yaml(card)


def test_card_command_regenerates_from_folder(described_model, tmp_path):
    folder = tmp_path / "model"
    described_model.model_card_data.model_id = "org/swe"
    card = save_with_evaluation(described_model, folder, evaluation=None)
    assert parse_evaluation_table(card) is None
    (folder / EVALUATION_FILE_NAME).write_text(json.dumps(EVALUATION), encoding="utf-8")
    result = CliRunner().invoke(app, ["card", str(folder), "--output", str(tmp_path / "hub_cards" / "swe.md")])
    assert result.exit_code == 0, result.output
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert evaluation_table_differences(card, EVALUATION) == []
    assert 'SentenceTransformer("org/swe")' in card  # the model id of the previous card is kept
    assert (tmp_path / "hub_cards" / "swe.md").read_text(encoding="utf-8") == card


def test_card_command_refuses_a_broken_folder(word_model, tmp_path):
    result = CliRunner().invoke(app, ["card", str(tmp_path / "missing")])
    assert result.exit_code == 1
    assert "no such model folder" in result.output
    save_model(word_model, tmp_path / "model")
    weights = tmp_path / "model" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    result = CliRunner().invoke(app, ["card", str(tmp_path / "model")])
    assert result.exit_code == 1
    assert "model.safetensors is corrupt or truncated" in result.output


def test_malformed_evaluation_file_is_reported(described_model, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / EVALUATION_FILE_NAME).write_text('{"results": {"stsb-en-test": {"score": 1}}}', encoding="utf-8")
    with pytest.raises(EvaluationFileError, match="no 'metric'"):
        read_evaluation(folder / EVALUATION_FILE_NAME)
    card = save_with_evaluation(described_model, folder, evaluation=None)
    assert "evaluation.json could not be read" in card
    assert parse_evaluation_table(card) is None


def test_evaluation_table_differences_name_each_difference():
    card = "# A card\n\n" + render_evaluation_table(EVALUATION) + "\n"
    assert evaluation_table_differences(card, EVALUATION) == []
    changed = json.loads(json.dumps(EVALUATION))
    changed["results"]["stsb-en-test"]["score"] = 80.0
    del changed["results"]["sick-dev"]
    changed["results"]["msrp-dev"] = {"metric": "ap", "score": 70.0}
    assert evaluation_table_differences(card, changed) == [
        "stsb-en-test: the card shows spearman 78.12, evaluation.json has spearman 80.00",
        "msrp-dev: evaluation.json has ap 70.00, the card does not list it",
        "sick-dev: the card shows spearman 65.00, evaluation.json does not have it",
    ]
    assert evaluation_table_differences("no table", EVALUATION) == [
        "the card has no evaluation table, but evaluation.json has 2 result(s)"
    ]
    assert evaluation_table_differences(card, None) == [
        "the card shows 2 evaluation result(s), but the folder has no evaluation.json"
    ]


def test_preview_card_marks_unmeasured_numbers(described_model):
    planned = {"results": {"stsb-en-test": {"metric": "spearman", "score": None}}}
    described_model.model_card_data.preview = True
    described_model.model_card_data.evaluation = planned
    described_model.model_card_data.generate_widget_examples = False
    described_model[0].metadata.vocab_size = 150000
    card = render_model_card(described_model)
    assert "**Preview.**" in card
    assert "150,000 (target) words" in card and "num_words=TBD" in card
    assert parse_evaluation_table(card) == {"stsb-en-test": ("spearman", "**TBD**")}
    assert "Sentences per second on a CPU: **TBD**" in card
    assert "tensor(" not in card  # no similarities computed from the stand-in table
    assert card_weights_sha256(card) is None


def test_every_section_finds_its_place_in_the_installed_st_template():
    base = Path(SentenceTransformerModelCardData.__dataclass_fields__["template_path"].default).read_text("utf-8")
    sections = read_sections(Path(st_static.model_card.SECTIONS_PATH).read_text("utf-8"))
    composed = compose_template(base, sections)
    for name, body in sections.items():
        assert composed.count(body) == 1, name
    assert "{% if base_model %} distilled from " in composed
    assert "*What are the known or foreseeable issues" not in composed  # ST's placeholder replaced
    # Sections stay in reading order: nothing fell back to the end except the footer.
    positions = [composed.index(sections[name]) for name in ("intro", "details", "speed", "limitations", "method")]
    assert positions == sorted(positions)
    assert composed.index(sections["license"]) < composed.index("## Citation")


def test_teacher_descriptions(tmp_path):
    assert describe_teacher("sentence-transformers/all-MiniLM-L6-v2").license == "apache-2.0"
    local = tmp_path / "multilingual-e5-small"
    local.mkdir()
    assert describe_teacher(str(local)).repo_id == "intfloat/multilingual-e5-small"
    assert describe_teacher(str(local)).license == "mit"
    own = tmp_path / "my-teacher"
    own.mkdir()
    (own / "README.md").write_text("---\nlicense: cc-by-4.0\n---\n# t\n", encoding="utf-8")
    assert describe_teacher(str(own)) == st_static.model_card.TeacherInfo("my-teacher", None, "cc-by-4.0")
    assert describe_teacher(None).markdown == "a Sentence Transformer (teacher not recorded)"


def test_card_data_rejects_a_malformed_evaluation_dict():
    with pytest.raises(EvaluationFileError, match="not a finite number"):
        StaticModelCardData(evaluation={"results": {"a": {"metric": "m", "score": float("nan")}}})


def test_hub_cards_refresh_writes_cards_of_built_models_only(described_model, tmp_path):
    refresh = importlib.import_module("hub_cards.refresh")
    built, kept, *others = refresh.SPECS
    folder = save_model(described_model, tmp_path / "models" / built.folder_name)
    (folder / EVALUATION_FILE_NAME).write_text(json.dumps(EVALUATION), encoding="utf-8")
    (tmp_path / "cards").mkdir()
    (tmp_path / "cards" / f"{kept.name}.md").write_text("a card built elsewhere\n", encoding="utf-8")
    assert refresh.main(["--models-dir", str(tmp_path / "models"), "--out-dir", str(tmp_path / "cards")]) == 0
    real = (tmp_path / "cards" / f"{built.name}.md").read_text(encoding="utf-8")
    assert "**Preview.**" not in real and "**TBD**" not in real
    assert parse_evaluation_table(real) == {"stsb-en-test": ("spearman", "78.12"), "sick-dev": ("spearman", "65.00")}
    assert f'SentenceTransformer("st-static/{built.name}")' in real
    # The spec's repository-relative recipe, not the command as typed on the build machine.
    assert built.commands("models") in real  # --recipe-dir defaults to models/
    assert DESCRIBED_METADATA["build_command"] not in real
    # The folder's card, then the data block that lets refresh.py render the card again without the model.
    assert real.startswith(
        (folder / "README.md").read_text(encoding="utf-8").rstrip("\n") + "\n\n<!-- st-static card data"
    )
    # Models not built here: their cards stay as they are, and none is made up.
    assert (tmp_path / "cards" / f"{kept.name}.md").read_text(encoding="utf-8") == "a card built elsewhere\n"
    assert not any((tmp_path / "cards" / f"{spec.name}.md").exists() for spec in others)


def test_the_repository_holds_cards_of_built_models_only():
    cards = sorted(Path(__file__).resolve().parents[1].glob("hub_cards/swe-*.md"))
    assert cards
    for card in cards:
        text = card.read_text(encoding="utf-8")
        assert "TBD" not in text and "**Preview.**" not in text, card.name


def test_card_command_measures_and_records_speed(described_model, tmp_path):
    folder = tmp_path / "model"
    save_with_evaluation(described_model, folder)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat\nhello world\n" * 50, encoding="utf-8")
    result = CliRunner().invoke(app, ["card", str(folder), "--speed-corpus", str(corpus), "--teacher-speed", "123"])
    assert result.exit_code == 0, result.output
    speed = json.loads((folder / "st_static_config.json").read_text(encoding="utf-8"))["metadata"]["speed"]
    assert speed["sentences_per_second"] > 0 and speed["teacher_sentences_per_second"] == 123
    assert "the first 100 lines of corpus.txt" in speed["texts"]
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"| this model | {speed['sentences_per_second']:,.0f} |" in card
    assert "| 123 |" in card and "Not measured" not in card
    assert load_model(folder).encode(["hello world"]).shape == (1, described_model.get_embedding_dimension())


def test_speed_needs_texts(word_model):
    with pytest.raises(ValueError, match="at least one text"):
        measure_speed(word_model, [])


def test_licence_notes_name_every_training_file_and_never_guess_from_its_name():
    from st_static.model.metadata import ModelMetadata
    from st_static.model_card.facts import TeacherInfo, license_facts

    metadata = ModelMetadata(corpus="en.txt, en-ja.tsv", extra_pairs=["en-ja-jmdict.tsv"])
    teacher = TeacherInfo("multilingual-e5-small", "intfloat/multilingual-e5-small", "mit")
    license_, _, notes = license_facts(metadata, teacher)
    assert license_ == "mit"
    assert notes == [
        "`en.txt`: licence not recorded, check it.",
        "`en-ja.tsv`: licence not recorded, check it.",
        "`en-ja-jmdict.tsv`: licence not recorded, check it.",
    ]
    described = metadata.updated(data_license="JMdict (CC BY-SA 4.0) and GPL-2+ catalogues")
    _, _, notes = license_facts(described, teacher)
    assert notes[0] == "`en.txt`, `en-ja.tsv`, `en-ja-jmdict.tsv`: JMdict (CC BY-SA 4.0) and GPL-2+ catalogues"
    assert "copyleft" in notes[-1]


def test_a_crosslingual_build_names_each_text_file_once_in_the_method_and_the_licence():
    from st_static.model.metadata import ModelMetadata
    from st_static.model_card.facts import TeacherInfo, license_facts, stage_descriptions

    # A cross-lingual build records its corpus as one string naming the pair files too (several per language).
    metadata = ModelMetadata(
        corpus="en-60k.txt, parallel/en-de.tsv, extra/en-de.tsv",
        parallel=["parallel/en-de.tsv", "extra/en-de.tsv"],
        languages=["en", "de"],
        stages=["extraction", "pca", "contrastive"],
        sentences_per_word=10,
        data_license="GPL-2+",
    )
    extraction = stage_descriptions(metadata)[0]["text"]
    assert "up to 10 sentences of `en-60k.txt`, `parallel/en-de.tsv`, `extra/en-de.tsv` that contain it" in extraction
    teacher = TeacherInfo("multilingual-e5-small", "intfloat/multilingual-e5-small", "mit")
    _, _, notes = license_facts(metadata, teacher)
    assert notes[0] == "`en-60k.txt`, `parallel/en-de.tsv`, `extra/en-de.tsv`: GPL-2+"


def test_the_completion_stage_says_what_it_added_for_each_kind_of_table():
    from st_static.model.metadata import ModelMetadata
    from st_static.model_card.facts import stage_descriptions

    english = ModelMetadata(languages=["en"], stages=["extraction", "completion", "pca", "distillation"])
    crosslingual = ModelMetadata(languages=["en", "ja"], stages=["extraction", "completion", "pca", "contrastive"])
    english_completion = stage_descriptions(english)[1]
    assert english_completion["title"] == "Completion"
    assert "Frequent words of the language" in english_completion["text"]
    assert "Chinese/Japanese" not in english_completion["text"]
    assert "Chinese/Japanese tokens that the corpus missed" in stage_descriptions(crosslingual)[1]["text"]


def test_the_limitations_say_what_a_text_without_a_known_word_gets(described_model, fallback_model, tmp_path):
    plain = save_with_evaluation(described_model, tmp_path / "plain")
    assert "a text without any known word gets the zero vector" in plain
    fallback_model[0].metadata = json.loads(json.dumps(DESCRIBED_METADATA))
    fallback_model.model_card_data = StaticModelCardData()
    fallback_model.model_card_data.register_model(fallback_model)
    with_fallback = save_with_evaluation(fallback_model, tmp_path / "fallback")
    assert "zero vector" not in with_fallback
    assert "reads the fallback rows of its characters (or the empty text's row)" in with_fallback


def test_card_lists_the_task_type_scores_with_their_means(described_model, tmp_path):
    evaluation = {
        "model": "m",
        "results": {
            "stsb-en-test": {"metric": "spearman_cosine", "score": 76.0, "kind": "sts"},
            "bbc-news-classification": {"metric": "accuracy", "score": 96.0, "kind": "task", "type": "classification"},
            "rotten-tomatoes-sentiment": {
                "metric": "accuracy",
                "score": 72.0,
                "kind": "task",
                "type": "classification",
            },
            "bbc-news-title-to-article": {"metric": "ndcg_at_10", "score": 65.0, "kind": "task", "type": "retrieval"},
        },
    }
    card = save_with_evaluation(described_model, tmp_path / "model", evaluation=evaluation)
    assert (
        "| classification (accuracy) | 2 | 84.00 | bbc-news-classification 96.00, rotten-tomatoes-sentiment 72.00 |"
        in card
    )
    assert "| retrieval (nDCG@10) | 1 | 65.00 | bbc-news-title-to-article 65.00 |" in card
    assert "| **task mean** | 3 | **77.67** | |" in card
    assert "| STS mean (Spearman) | 1 | 76.00 | |" in card
    assert parse_evaluation_table(card)["bbc-news-title-to-article"] == ("ndcg_at_10", "65.00")  # every task listed
    task_types = {result["task"]["type"] for result in card_yaml(card)["model-index"][0]["results"]}
    assert {"classification", "retrieval", "semantic-similarity"} <= task_types


def test_a_table_from_a_gemma_teacher_carries_the_gemma_terms(described_model, tmp_path):
    described_model[0].metadata.teacher = "google/embeddinggemma-300m"
    card = save_with_evaluation(described_model, tmp_path / "model")
    assert "license: gemma" in card
    assert "Gemma Terms of Use found at https://ai.google.dev/gemma/terms" in card
    assert "Prohibited Use Policy" in card


def test_a_template_file_changed_after_load_cannot_change_what_a_save_renders(described_model, tmp_path):
    save_model(described_model, tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    template = Path(loaded.model_card_data.template_path)
    assert template.parent != Path(tempfile.gettempdir())  # never a shared, predictable name
    assert template.parent.stat().st_mode & 0o077 == 0  # a private folder of this process
    marker = tmp_path / "PWNED"
    injected = "{{ cycler.__init__.__globals__.os.system('touch " + str(marker) + "') }}INJECTED"
    template.write_text(template.read_text(encoding="utf-8") + injected, encoding="utf-8")
    save_model(loaded, tmp_path / "saved")
    loaded.save_pretrained(str(tmp_path / "bare-save"))
    assert not marker.exists()
    for folder in ("saved", "bare-save"):
        card = (tmp_path / folder / "README.md").read_text(encoding="utf-8")
        assert "INJECTED" not in card and "Static word embeddings" in card


def test_metadata_holding_backticks_and_html_stays_inside_the_cards_code(described_model, tmp_path):
    markdown_it = pytest.importorskip("markdown_it")
    command = "st-static build --out m\n```\n<script>alert(1)</script>\n```"
    metadata = json.loads(json.dumps(DESCRIBED_METADATA))
    metadata["build_command"] = command
    metadata["corpus"] = "data/``<b>corpus</b>``.txt"
    metadata["prompt"] = "`<i>query</i>: "
    metadata["speed"]["command"] = "encode(texts) ` <img src=x onerror=alert(2)>"
    described_model[0].metadata = metadata
    card = (save_model(described_model, tmp_path / "model") / "README.md").read_text(encoding="utf-8")
    html = markdown_it.MarkdownIt("commonmark").render(card.split("---\n", 2)[2])
    for tag in ("<script", "<b>", "<i>", "<img"):
        assert tag not in html, tag  # shown as text, never as HTML
    escaped = command.replace("<", "&lt;").replace(">", "&gt;")
    assert f'<code class="language-bash">{escaped}\n</code>' in html  # the whole command, in one code block
    for text in ("&lt;b&gt;corpus&lt;/b&gt;", "&lt;i&gt;query&lt;/i&gt;", "&lt;img src=x onerror=alert(2)&gt;"):
        assert re.search(rf"<code>[^<]*{re.escape(text)}[^<]*</code>", html), text


def test_card_states_the_build_time_and_machine_from_stage_scores(described_model, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    record = {"seconds": {"extraction": 2900.4, "completion": 171, "pca": 9, "distillation": 240}, "machine": "CPU X"}
    (folder / "stage_scores.json").write_text(json.dumps(record), encoding="utf-8")
    card = save_with_evaluation(described_model, folder)
    assert "Build time: 55 min on CPU X (extraction 2,900 s, completion 171 s, PCA 9 s, distillation 240 s)." in card


def test_card_without_a_build_record_says_nothing_of_build_time(described_model, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "stage_scores.json").write_text('{"seconds": "broken"}', encoding="utf-8")
    assert "Build time" not in save_with_evaluation(described_model, folder)
