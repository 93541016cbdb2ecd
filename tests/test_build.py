"""The one-command build: stages, caching, cross-lingual path, CLI errors."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from sentence_transformers import SentenceTransformer
from typer.testing import CliRunner

import st_static
import st_static.stages.extraction as stages_module
from st_static.cli import app
from st_static.errors import StStaticError
from st_static.evaluation.report import stage_scores_markdown
from st_static.extraction import CorpusError
from st_static.model.tokenization import SENTINEL
from st_static.pipeline.publish import build
from st_static.settings import BuildSettings
from st_static.stages.base import SECONDS_FILE_NAME

from .teachers import CJK_WORDS, HAN_CHARACTERS, TINY_CORPUS, make_tiny_teacher

GERMAN = [
    "die katze sitzt auf der matte",
    "ein hund sitzt auf dem holz",
    "die katze jagt den hund",
    "die matte war rot",
    "hunde und katzen sind freunde",
    "eine rote katze",
    "das holz war alt und der hund war jung",
    "katzen sitzen",
    "teile der alten matte",
    "die freunde sitzen auf einem holz",
    "unglaubliche zerlegung",
    "die katze sitzt",
]


@pytest.fixture(scope="module")
def teacher(tmp_path_factory) -> Path:
    return make_tiny_teacher(tmp_path_factory.mktemp("teacher"))


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(TINY_CORPUS * 3) + "\n", encoding="utf-8")
    return path


def tiny_settings(teacher: Path, **overrides) -> BuildSettings:
    values = {
        "teacher": str(teacher),
        "dim": 8,
        "min_sentences": 1,
        "steps": 12,
        "batch_size": 4,
        "validation_size": 8,
        "eval_steps": 4,
        "pca_sample_size": 100,
    }
    return BuildSettings.from_flat(**{**values, **overrides})


def fake_evaluator(model: SentenceTransformer) -> dict[str, dict[str, float]]:
    embeddings = model.encode(["the cat sat", "a dog sat"])
    return {"toy-sts": {"metric": "cosine", "score": float(100 * embeddings[0] @ embeddings[1])}}


def test_build_runs_every_stage_and_publishes_a_bare_loadable_model(teacher, corpus, tmp_path):
    settings = tiny_settings(teacher, corpus=str(corpus))
    result = build(settings, tmp_path / "model", evaluate=fake_evaluator, build_command="st-static build ...")
    assert set(result.stage_scores) == {"extraction", "pca", "distillation", "fallback", "pieces", "storage (float16)"}
    model = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    loaded = st_static.load_model(tmp_path / "model")
    assert loaded[0].num_piece_rows > 0 and loaded[0].storage == "float16"  # the defaults: pieces, a float16 table
    assert loaded[0].metadata.pieces.pieces == loaded[0].num_piece_rows
    weights = load_file(str(tmp_path / "model" / "model.safetensors"))
    assert weights["embeddings"].dtype == torch.float16  # one row per row, not per tokenizer key
    assert len(weights["embeddings"]) == loaded[0].num_words + 1 < len(weights["mapping"])
    assert model.encode("the cat").shape == (8,)
    np.testing.assert_allclose(np.linalg.norm(model.encode(["", "?", "zzqq"]), axis=1), 1.0, atol=1e-5)
    config = json.loads((tmp_path / "model" / "st_static_config.json").read_text())
    assert config["metadata"]["stages"] == ["extraction", "pca", "distillation"]
    assert config["metadata"]["fallback"]["empty_text_scale"] > 0
    evaluation = json.loads((tmp_path / "model" / "evaluation.json").read_text())
    scores = {stage: result.stage_scores[stage]["toy-sts"]["score"] for stage in ("distillation", "fallback")}
    assert evaluation["results"]["toy-sts"]["score"] == pytest.approx(scores["fallback"], abs=0.05)  # float16
    assert scores["fallback"] == pytest.approx(scores["distillation"], abs=1e-3)  # texts with words keep vectors
    assert (tmp_path / "model" / "training" / "training_curve.png").is_file()
    assert "st-static build ..." in (tmp_path / "model" / "README.md").read_text()
    assert "| distillation |" in stage_scores_markdown(result.stage_scores)


def test_a_float32_build_also_stores_one_row_per_row_and_encodes_as_the_float16_one(teacher, corpus, tmp_path):
    work = tmp_path / "work"
    half = build(tiny_settings(teacher, corpus=str(corpus)), tmp_path / "half", work_dir=work)
    full = build(tiny_settings(teacher, corpus=str(corpus), storage="float32"), tmp_path / "full", work_dir=work)
    assert "storage (float32)" in full.seconds
    weights = load_file(str(tmp_path / "full" / "model.safetensors"))
    loaded = st_static.load_model(tmp_path / "full")
    assert weights["embeddings"].dtype == torch.float32 and loaded[0].storage == "float32"
    assert len(weights["embeddings"]) == loaded[0].num_words + 1 < len(weights["mapping"])  # not per tokenizer key
    texts = ["the cat sat", "a dog", "", "zzqq"]
    st_static.save_model(loaded, tmp_path / "again")  # a loaded float32 table saves as it was stored
    assert len(load_file(str(tmp_path / "again" / "model.safetensors"))["embeddings"]) == len(weights["embeddings"])
    bare = SentenceTransformer(str(tmp_path / "full"), device="cpu").encode(texts)
    np.testing.assert_allclose(bare, loaded.encode(texts), atol=1e-6)
    np.testing.assert_allclose(bare, half.model.encode(texts), atol=2e-3)  # float16 rounding only


def test_a_rerun_reuses_finished_stages(teacher, corpus, tmp_path, monkeypatch):
    settings = tiny_settings(teacher, corpus=str(corpus))
    first = build(settings, tmp_path / "model")
    monkeypatch.setattr(stages_module, "extract_word_vectors", lambda *a, **k: pytest.fail("teacher ran again"))
    again = build(settings, tmp_path / "model")
    texts = ["the cat sat on the mat", "dogs"]
    np.testing.assert_allclose(again.model.encode(texts), first.model.encode(texts), atol=1e-6)
    # A reused stage counts the seconds it took when it was made: the build's seconds are those from an empty folder.
    reused = [stage for stage in first.seconds if not stage.startswith("storage")]
    assert reused and all(again.seconds[stage] == first.seconds[stage] for stage in reused)
    (record,) = (tmp_path / "model.work").glob(f"extraction-*/{SECONDS_FILE_NAME}")
    record.write_text(json.dumps({"seconds": 12345.0}), encoding="utf-8")  # the record is what a rerun reports
    assert build(settings, tmp_path / "model").seconds["extraction"] == 12345.0
    record.unlink()  # a folder made before the record: this run's seconds, and no record made from them
    started = time.perf_counter()
    rerun = build(settings, tmp_path / "model")
    assert 0 <= rerun.seconds["extraction"] <= time.perf_counter() - started
    assert not record.exists()
    # A changed refinement setting redoes only the refinement.
    changed = build(tiny_settings(teacher, corpus=str(corpus), steps=8), tmp_path / "model")
    assert changed.training["steps"] == 8


def test_completion_and_precision_settings_key_the_stages_they_change(teacher, corpus, tmp_path, monkeypatch):
    build(tiny_settings(teacher, corpus=str(corpus), complete_words=0), tmp_path / "model")
    work = tmp_path / "model.work"
    monkeypatch.setattr(stages_module, "extract_word_vectors", lambda *a, **k: pytest.fail("teacher pass ran again"))
    completed = build(tiny_settings(teacher, corpus=str(corpus), complete_words=3), tmp_path / "model")
    assert len(list(work.glob("extraction-*"))) == 1  # completion reuses the corpus pass
    assert len(list(work.glob("completion-*"))) == 1
    assert "completion" in completed.seconds
    monkeypatch.undo()
    build(tiny_settings(teacher, corpus=str(corpus), teacher_precision="float32"), tmp_path / "model")
    build(tiny_settings(teacher, corpus=str(corpus), teacher_precision="bfloat16"), tmp_path / "model")
    assert len(list(work.glob("extraction-*"))) == 2  # float32 and bfloat16 (auto shares the key of one of them)


def test_crosslingual_build_shares_one_table(teacher, tmp_path):
    parallel = tmp_path / "en-de.tsv"
    rows = [f"{english}\t{german}" for english, german in zip(TINY_CORPUS, GERMAN, strict=True)]
    parallel.write_text("en\tother\n" + "\n".join(rows * 2) + "\n", encoding="utf-8")
    settings = tiny_settings(teacher, parallel=[str(parallel)], languages=["en", "de"])
    result = build(settings, tmp_path / "model")
    module = result.model[0]
    assert module.metadata.languages == ["en", "de"]
    assert module.metadata.stages == ["extraction", "pca", "contrastive"]
    assert {"katze", "cat", "die", "the"} <= set(module.vocabulary)
    assert not module.lowercase  # German keeps its case; English words are lowercase with case variants
    words = module.num_vocabulary_words  # rows after it: the fallback rows (the empty-text row every text reads)
    assert (
        [row for row in module.token_ids(["The"])[0].tolist() if row < words]
        == [row for row in module.token_ids(["the"])[0].tolist() if row < words]
        == [module.vocabulary.index("the")]
    )


def test_crosslingual_build_with_chinese_adds_the_teachers_tokens_and_distils(tmp_path):
    teacher = make_tiny_teacher(tmp_path / "cjk", kind="cjk")
    rng = np.random.default_rng(0)
    english = [f"{TINY_CORPUS[index % 12]} {chr(97 + index // 26)}{chr(97 + index % 26)}" for index in range(240)]
    # Single Han characters only: the teacher's multi-character words never occur in the corpus.
    chinese = ["".join(rng.choice(HAN_CHARACTERS[:130], size=6)) + "\u3002" for _ in range(240)]
    parallel = tmp_path / "en-zh.tsv"
    parallel.write_text(
        "en\tother\n" + "\n".join(f"{e}\t{z}" for e, z in zip(english, chinese, strict=True)) + "\n",
        encoding="utf-8",
    )
    settings = tiny_settings(
        teacher,
        parallel=[str(parallel)],
        languages=["en", "zh"],
        min_sentences=2,
        batch_size=8,
        validation_size=16,
        crosslingual_distillation=True,
    )
    result = build(settings, tmp_path / "model")

    module = result.model[0]
    assert module.metadata.stages == ["extraction", "completion", "pca", "contrastive"]
    assert set(CJK_WORDS) | set(HAN_CHARACTERS) <= set(module.vocabulary)
    assert module.tokenizer.encode(CJK_WORDS[0]).tokens == [SENTINEL, CJK_WORDS[0]]  # SENTINEL: fallback rows
    assert "completion" in result.seconds
    (completion,) = result.work_dir.glob("completion-*")
    assert json.loads((completion / "stats.json").read_text())["completion"]["added"] >= len(CJK_WORDS)
    history = json.loads((result.output / "training" / "training_history.json").read_text())
    assert history["settings"]["loss"] == "BilingualContrastiveLoss + SimilarityDistillationLoss"
    # Without completion, the multi-character words stay out of the table.
    plain = build(
        tiny_settings(
            teacher, parallel=[str(parallel)], languages=["en", "zh"], min_sentences=2, complete_spaceless=False
        ),
        tmp_path / "plain",
    )
    assert not set(CJK_WORDS) & set(plain.model[0].vocabulary)


def test_build_refuses_bad_inputs_before_heavy_work(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        build(BuildSettings.from_flat(teacher="never-loaded", corpus=str(tmp_path / "absent.txt")), tmp_path / "out")
    with pytest.raises(CorpusError, match="corpus is needed"):
        build(BuildSettings.from_flat(teacher="never-loaded"), tmp_path / "out")
    (tmp_path / "pairs.tsv").write_text("en\tother\na\tb\n")
    with pytest.raises(ValueError, match="needs 2 parallel file"):
        BuildSettings(parallel=[str(tmp_path / "pairs.tsv")], languages=["en", "de", "ja"])


def test_cli_build_reports_errors_without_a_traceback(tmp_path):
    result = CliRunner().invoke(app, ["build", "--out", str(tmp_path / "m"), "--corpus", str(tmp_path / "none.txt")])
    assert result.exit_code == 1
    assert "does not exist" in result.output
    assert "Traceback" not in result.output


def test_cli_build_without_a_corpus_reads_the_bundled_one_and_scores_the_bundled_sts_files(tmp_path, monkeypatch):
    import st_static.pipeline.publish as build_module
    from st_static import bundled

    captured: dict[str, object] = {}

    def fake_build(settings, out, **kwargs):
        captured["settings"] = settings
        captured["scores"] = kwargs["evaluate"]
        raise StStaticError("stopped after reading the settings")

    monkeypatch.setattr(build_module, "build", fake_build)
    monkeypatch.setenv("ST_STATIC_CACHE", str(tmp_path / "cache"))
    result = CliRunner().invoke(app, ["build", "--out", str(tmp_path / "m")])
    assert result.exit_code == 1 and "stopped after reading the settings" in result.output
    assert "the full English corpus cannot be fetched" in result.output  # tests are offline (conftest)
    assert "reading the bundled English corpus" in result.output
    settings = captured["settings"]
    (corpus,) = settings.corpus
    assert Path(corpus).parent == tmp_path / "cache" and Path(corpus).stat().st_size > 40_000_000
    assert settings.data_license == bundled.DEFAULT_CORPUS_LICENSE
    assert captured["scores"] is not None and "the bundled stsb-en-dev,stsb-en-test" in result.output
    # a license given stays; a corpus given is read instead
    own = tmp_path / "own.txt"
    own.write_text("a sentence\n", encoding="utf-8")
    CliRunner().invoke(app, ["build", "--out", str(tmp_path / "m"), "--corpus", str(own), "--data-license", "mine"])
    assert captured["settings"].corpus == [str(own)] and captured["settings"].data_license == "mine"


def test_cli_build_without_a_corpus_reads_the_full_corpus_where_it_can_be_fetched(tmp_path, monkeypatch):
    import st_static.corpus_fetch as corpus_fetch
    import st_static.corpus_fetch.default as default_corpus
    import st_static.pipeline.publish as build_module

    captured: dict[str, object] = {}

    def fake_build(settings, out, **kwargs):
        captured["settings"] = settings
        raise StStaticError("stopped after reading the settings")

    full = tmp_path / "en-full.txt"
    full.write_text("a fetched sentence\n", encoding="utf-8")
    asked: list[bool] = []

    def fake_full_corpus(fetch: bool = True, cache=None, progress=None):
        asked.append(fetch)
        return full

    monkeypatch.setattr(build_module, "build", fake_build)
    monkeypatch.setattr(default_corpus, "full_corpus", fake_full_corpus)
    result = CliRunner().invoke(app, ["build", "--out", str(tmp_path / "m")])
    assert "No --corpus: reading the full English corpus" in result.output
    assert asked == [True]
    assert captured["settings"].corpus == [str(full)]
    assert captured["settings"].data_license == corpus_fetch.FULL_CORPUS_LICENSE


def test_the_bundled_corpus_is_decompressed_once_and_checked(tmp_path, monkeypatch):
    from st_static import bundled

    path = bundled.default_corpus(tmp_path)
    assert path.read_text(encoding="utf-8").count("\n") == 454_003
    modified = path.stat().st_mtime_ns
    assert bundled.default_corpus(tmp_path) == path and path.stat().st_mtime_ns == modified
    damaged = tmp_path / "damaged.txt.xz"
    damaged.write_bytes(bundled.DEFAULT_CORPUS_ARCHIVE.read_bytes()[:100_000])
    monkeypatch.setattr(bundled, "DEFAULT_CORPUS_ARCHIVE", damaged)
    with pytest.raises(bundled.BundledDataError, match="damaged"):
        bundled.default_corpus(tmp_path / "other")
    assert list((tmp_path / "other").iterdir()) == []  # nothing half-written
    monkeypatch.setattr(bundled, "DEFAULT_CORPUS_ARCHIVE", tmp_path / "missing.txt.xz")
    with pytest.raises(bundled.BundledDataError, match="--corpus"):
        bundled.default_corpus(tmp_path / "other")


def test_cli_build_passes_its_options_to_the_build(tmp_path, monkeypatch):
    import st_static.pipeline.publish as build_module

    captured: dict[str, BuildSettings] = {}

    def fake_build(settings, out, **kwargs):
        captured["settings"] = settings
        raise StStaticError("stopped after reading the settings")

    monkeypatch.setattr(build_module, "build", fake_build)
    parallel = tmp_path / "en-ja.tsv"
    parallel.write_text("en\tother\na\tb\n", encoding="utf-8")
    arguments = ["build", "--out", str(tmp_path / "m"), "--parallel", str(parallel), "--languages", "en,ja"]
    arguments += ["--removed-components", "10", "--no-complete-spaceless", "--crosslingual-distillation"]
    arguments += ["--extra-pairs", f"ja={parallel}"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1 and "stopped after reading the settings" in result.output
    settings = captured["settings"]
    assert settings.reduction.removed_components == 10 and settings.languages == ["en", "ja"]
    assert settings.extraction.complete_spaceless is False and settings.refinement.crosslingual_distillation is True
    assert settings.extra_pairs == {"ja": str(parallel)}
    result = CliRunner().invoke(
        app, ["build", "--out", str(tmp_path / "m"), "--parallel", str(parallel), "--extra-pairs", "ja"]
    )
    assert result.exit_code == 1 and "KEY=VALUE" in result.output


def test_cli_build_shows_one_line_per_stage_and_the_trainer_logs_only_when_verbose(teacher, corpus, tmp_path):
    arguments = ["build", "--teacher", str(teacher), "--corpus", str(corpus), "--dim", "8", "--min-sentences", "1"]
    arguments += ["--batch-size", "4", "--validation-size", "8", "--eval-steps", "4", "--pca-sample-size", "100"]
    arguments += ["--out", str(tmp_path / "m")]
    quiet = CliRunner().invoke(app, [*arguments, "--steps", "12"])
    assert quiet.exit_code == 0, quiet.output
    assert "{'loss'" not in quiet.output and "'eval_loss'" not in quiet.output
    assert "Refining (distillation)" in quiet.output and "Loading weights" not in quiet.output
    assert "Encoding sentences" in quiet.output
    history = json.loads((tmp_path / "m" / "training" / "training_history.json").read_text())
    logged = [entry["step"] for entry in history["trainer_logs"] if "loss" in entry]
    assert logged == [4, 8, 12]  # the logs the terminal no longer shows are kept
    assert any("eval_loss" in entry for entry in history["trainer_logs"])

    verbose = CliRunner().invoke(app, [*arguments, "--steps", "8", "--verbose"])
    assert verbose.exit_code == 0, verbose.output
    assert "{'loss'" in verbose.output and "'eval_loss'" in verbose.output
    # --verbose changes what is shown, not what is built: a quiet rerun reuses the verbose run's refinement.
    work = tmp_path / "m.work"
    assert len(list(work.glob("distillation-*"))) == 2
    again = CliRunner().invoke(app, [*arguments, "--steps", "8"])
    assert again.exit_code == 0, again.output
    assert len(list(work.glob("distillation-*"))) == 2 and "Refining" not in again.output


def test_extra_pairs_join_the_contrastive_training_only(teacher, tmp_path):
    parallel = tmp_path / "en-de.tsv"
    rows = [f"{english}\t{german}" for english, german in zip(TINY_CORPUS, GERMAN, strict=True)]
    parallel.write_text("en\tother\n" + "\n".join(rows) + "\n", encoding="utf-8")
    dictionary = tmp_path / "en-de-words.tsv"
    words = [("cat", "katze"), ("dog", "hund"), ("mat", "matte"), ("red", "rot"), ("old", "alt"), ("log", "holz")]
    dictionary.write_text("en\tother\n" + "\n".join(f"{e}\t{g}" for e, g in words) + "\n", encoding="utf-8")
    plain = build(tiny_settings(teacher, parallel=[str(parallel)], languages=["en", "de"]), tmp_path / "plain")
    settings = tiny_settings(
        teacher, parallel=[str(parallel)], languages=["en", "de"], extra_pairs={"de": str(dictionary)}
    )
    result = build(settings, tmp_path / "model", work_dir=plain.work_dir)

    history = json.loads((result.output / "training" / "training_history.json").read_text())
    # 12 pairs are too few for a validation split of whole batches: all of them train.
    assert history["settings"]["train_size"] == len(TINY_CORPUS) + len(words)
    assert history["settings"]["training_only_pairs"] == {"en-de": len(words)}
    # Only the refinement is new: extraction and PCA are the cached ones, so the vocabulary is unchanged.
    assert result.model[0].vocabulary == plain.model[0].vocabulary
    assert len(list(plain.work_dir.glob("contrastive-*"))) == 2 and len(list(plain.work_dir.glob("pca-*"))) == 1
    with pytest.raises(ValueError, match="not one of the paired languages"):
        build(
            tiny_settings(
                teacher, parallel=[str(parallel)], languages=["en", "de"], extra_pairs={"fr": str(dictionary)}
            ),
            tmp_path / "x",
        )


def failed_ranks(stderr: str) -> str:
    """What each rank wrote about its failure (its first error lines), then the end of torchrun's own report."""
    errors = [line for line in stderr.splitlines() if "Error" in line or "error" in line or "terminate" in line]
    return "\n".join([*errors[:40], "...", stderr[-1500:]])


def test_the_whole_build_runs_under_torchrun_like_one_process(teacher, corpus, tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    from .test_extraction import free_port

    arguments = ["build", "--teacher", str(teacher), "--corpus", str(corpus), "--dim", "8", "--min-sentences", "1"]
    arguments += ["--steps", "12", "--batch-size", "4", "--validation-size", "8", "--eval-steps", "4"]
    arguments += ["--pca-sample-size", "100"]
    single = CliRunner().invoke(app, [*arguments, "--out", str(tmp_path / "one")])
    assert single.exit_code == 0, single.output
    torchrun = shutil.which("torchrun") or str(Path(sys.executable).with_name("torchrun"))
    command = [torchrun, "--nproc-per-node", "2", "--master-port", str(free_port()), "-m", "st_static.cli"]
    soup = ["--soup-seeds", "1"]  # both processes train seed 1 too, after seed 0
    result = subprocess.run(
        [*command, *arguments, *soup, "--out", str(tmp_path / "two")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, failed_ranks(result.stderr)
    (one_extraction,) = (tmp_path / "one.work").glob("extraction-*")
    (two_extraction,) = (tmp_path / "two.work").glob("extraction-*")
    one_raw = SentenceTransformer(str(one_extraction / "model"), device="cpu")
    two_raw = SentenceTransformer(str(two_extraction / "model"), device="cpu")
    texts = ["the cat sat on the mat", "a red dog", "tokenisation"]
    np.testing.assert_allclose(two_raw.encode(texts), one_raw.encode(texts), atol=1e-5)
    np.testing.assert_allclose(
        np.load(two_extraction / "targets" / "teacher_embeddings.npy"),
        np.load(one_extraction / "targets" / "teacher_embeddings.npy"),
        atol=1e-5,
    )
    history = json.loads((tmp_path / "two" / "training" / "training_history.json").read_text())
    assert history["steps"] == 12  # both processes trained (DDP); the first one wrote the model once
    two = SentenceTransformer(str(tmp_path / "two"), device="cpu")
    assert two.encode(texts).shape == (3, 8) and np.isfinite(two.encode(texts)).all()
    assert not list((tmp_path / "two.work").glob("seed-*-training.log"))  # no child process: the ranks trained it
    trained = sorted(tmp_path.glob("two.work/distillation-*"))
    records = [json.loads((path / "training" / "training_history.json").read_text()) for path in trained]
    assert sorted(record["settings"]["seed"] for record in records) == [0, 1]
    losses = [[log["loss"] for log in record["trainer_logs"] if "loss" in log] for record in records]
    assert len(losses[0]) == 3 and losses[0] != losses[1]  # each seed's batches (the tiny tables keep step 0: best)
    seeds = [st_static.load_model(path)[0].embedding.weight.detach() for path in trained]
    (souped,) = (tmp_path / "two.work").glob("soup-*")
    assert torch.allclose(
        st_static.load_model(souped)[0].embedding.weight.detach(), (seeds[0] + seeds[1]) / 2, atol=1e-6
    )
    assert st_static.load_model(tmp_path / "two")[0].metadata.soup_seeds == [0, 1]


def test_training_only_pairs_may_translate_a_training_sentence_again_but_never_a_held_out_one():
    from st_static.training.datasets import split_indices, translation_datasets

    pairs = [(f"sentence {index}", f"satz {index}") for index in range(40)]
    _, held_out = split_indices(len(pairs), 8, seed=0)
    held_out_english = {pairs[index][0] for index in held_out}
    trained_english = [english for english, _ in pairs if english not in held_out_english]
    extra = [(english, f"{german} (other script)") for english, german in pairs]  # every sentence once more
    repeated = next(german for english, german in extra if english == trained_english[0])
    extra += [(trained_english[1], repeated), ("new", "satz 1")]  # each repeats a translation: skipped
    split, kept = translation_datasets(pairs, "en-de", batch_size=8, validation_size=8, seed=0, training_only=extra)
    # The 32 training sentences get their second translation; the 8 held-out ones do not (their English would leak
    # into the training), and no translation is trained twice.
    assert kept == 32 and len(split.validation) == 8
    assert set(split.validation["sentence1"]) == held_out_english
    added = list(zip(split.train["sentence1"][32:], split.train["sentence2"][32:], strict=True))
    assert {english for english, _ in added} == set(trained_english)
    assert all(german.endswith("(other script)") for _, german in added)
