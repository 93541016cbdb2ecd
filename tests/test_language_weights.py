"""More contrastive batches for a language (``--language-weights ja=3``): the weighted round robin over the
language pairs' datasets, the setting and its checks (a weight the pair files cannot fill refused before any stage),
and a refinement that trains in that order and records it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from sentence_transformers.base.sampler import RoundRobinBatchSampler
from torch.utils.data import BatchSampler, ConcatDataset, RandomSampler
from typer.testing import CliRunner

from st_static.cli import app
from st_static.cli.options import settings_from_options
from st_static.settings import BuildSettings, RefinementSettings, SettingsError
from st_static.training import HISTORY_FILE_NAME, refine_by_translation
from st_static.training.sampler import WeightedRoundRobinBatchSampler, batches_per_round

from .test_hostile_inputs import assert_one_error_line
from .test_pipeline_input_checks import check, write_pairs
from .test_training import make_model, make_sentences, make_words, translate


def samplers(sizes: list[int], batch_size: int, generator: torch.Generator) -> tuple[ConcatDataset, list]:
    parts = [list(range(size)) for size in sizes]
    batch_samplers = [
        BatchSampler(RandomSampler(part, generator=generator), batch_size=batch_size, drop_last=True) for part in parts
    ]
    return ConcatDataset(parts), batch_samplers


def source_of(batch: list[int], sizes: list[int]) -> int:
    """The dataset a batch of concatenated indices comes from."""
    first = batch[0]
    for position, size in enumerate(sizes):
        if first < size:
            return position
        first -= size
    raise AssertionError(f"index {batch[0]} is past the datasets")


def test_all_ones_is_the_plain_round_robin_batch_for_batch():
    sizes = [40, 24, 33]
    dataset, batch_samplers = samplers(sizes, 4, torch.Generator())
    plain = RoundRobinBatchSampler(dataset, batch_samplers, generator=torch.Generator(), seed=3)
    dataset, batch_samplers = samplers(sizes, 4, torch.Generator())
    weighted = WeightedRoundRobinBatchSampler(
        dataset, batch_samplers, generator=torch.Generator(), seed=3, repeats=[1, 1, 1]
    )
    assert list(weighted) == list(plain)
    assert len(weighted) == len(plain) == 18


def test_a_weight_takes_that_many_batches_per_round_until_a_dataset_runs_out():
    sizes = [40, 48]  # 10 and 12 batches of 4: the second runs out after 4 rounds of 3
    dataset, batch_samplers = samplers(sizes, 4, torch.Generator().manual_seed(0))
    sampler = WeightedRoundRobinBatchSampler(dataset, batch_samplers, repeats=[1, 3])
    batches = list(sampler)
    assert [source_of(batch, sizes) for batch in batches] == [0, 1, 1, 1] * 4
    assert len(sampler) == len(batches) == 16
    assert all(len(batch) == 4 for batch in batches)
    second = sorted(index - 40 for batch in batches if source_of(batch, sizes) == 1 for index in batch)
    assert second == list(range(48))  # every batch of the weighted dataset, each index once


@pytest.mark.parametrize("repeats", [[1], [1, 0], [1, 2.0], [True, 1]])
def test_repeats_must_be_one_positive_integer_per_dataset(repeats):
    dataset, batch_samplers = samplers([8, 8], 4, torch.Generator())
    with pytest.raises(ValueError, match="one positive integer per dataset"):
        WeightedRoundRobinBatchSampler(dataset, batch_samplers, repeats=repeats)


def test_batches_per_round_weighs_the_language_each_dataset_pairs_with_the_pivot():
    names = ["en-de", "en-zh-Hant", "distillation"]
    paired = {"en-de": "de", "en-zh-Hant": "zh-Hant"}
    assert batches_per_round(names, paired, {"zh-Hant": 3}) == {"en-de": 1, "en-zh-Hant": 3, "distillation": 1}
    assert batches_per_round(names, paired, None) == {"en-de": 1, "en-zh-Hant": 1, "distillation": 1}


@pytest.mark.parametrize(
    ("weights", "message"),
    [({"ja": 0}, "ja's weight must be a positive integer"), ({"ja": 1.5}, "positive integer"), ({"": 2}, "not a")],
)
def test_the_setting_checks_its_weights(weights, message):
    with pytest.raises(SettingsError, match=message):
        RefinementSettings(language_weights=weights)
    assert RefinementSettings(language_weights={}).language_weights is None


def test_the_option_parses_and_names_only_paired_languages(tmp_path):
    pairs = tmp_path / "en-de.tsv"
    pairs.write_text("en\tde\nthe cat\tdie Katze\n", encoding="utf-8")
    options = {"languages": "en,de", "parallel": [f"de={pairs}"]}
    settings = settings_from_options({**options, "language_weights": "de=2"})
    assert settings.refinement.language_weights == {"de": 2}
    with pytest.raises(SettingsError, match="'ja', which is not one of the paired languages"):
        settings_from_options({**options, "language_weights": "ja=2"})
    with pytest.raises(SettingsError, match="cross-lingual build"):
        BuildSettings.from_flat(corpus=[str(pairs)], language_weights={"de": 2})


def test_the_refinement_trains_in_the_weighted_order_and_records_it(tmp_path, monkeypatch):
    english, german, french = make_words("e", 20), make_words("g", 20), make_words("f", 20)
    sentences = make_sentences(english, 600, seed=6)
    first, second = sentences[:300], sentences[300:]
    pairs = {
        ("en", "de"): list(zip(first, translate(first, english, german), strict=True)),
        ("en", "fr"): list(zip(second, translate(second, english, french), strict=True)),
    }
    sources: list[int] = []
    iterate = WeightedRoundRobinBatchSampler.__iter__

    def spy(sampler: WeightedRoundRobinBatchSampler):
        sizes = [len(part) for part in sampler.dataset.datasets]
        for batch in iterate(sampler):
            sources.append(source_of(batch, sizes))
            yield batch

    monkeypatch.setattr(WeightedRoundRobinBatchSampler, "__iter__", spy)
    refine_by_translation(
        make_model(english + german + french),
        pairs,
        steps=12,
        batch_size=16,
        learning_rate=0.05,
        validation_size=64,
        eval_steps=6,
        language_weights={"fr": 3},
        output_dir=tmp_path,
    )
    assert sources[:12] == [0, 1, 1, 1] * 3
    settings = json.loads((tmp_path / HISTORY_FILE_NAME).read_text())["settings"]
    assert settings["batches_per_round"] == {"en-de": 1, "en-fr": 3}
    assert settings["language_weights"] == {"fr": 3}


def test_a_weight_beyond_the_batches_a_language_makes_is_refused_before_training():
    english, german, french = make_words("e", 20), make_words("g", 20), make_words("f", 20)
    sentences = make_sentences(english, 400, seed=6)
    first, second = sentences[:300], sentences[300:]
    pairs = {
        ("en", "de"): list(zip(first, translate(first, english, german), strict=True)),
        ("en", "fr"): list(zip(second, translate(second, english, french), strict=True)),  # 100: no validation split
    }
    model = make_model(english + german + french)
    with pytest.raises(ValueError, match="gives fr 9 batches per round, but its training pairs make 6 batches of 16"):
        refine_by_translation(
            model, pairs, steps=4, batch_size=16, validation_size=10, eval_steps=2, language_weights={"fr": 9}
        )


# ------------------------------------------------------------------------ refused before any stage runs
def numbered_pairs(path: Path, count: int, language: str) -> Path:
    """A pair file of ``count`` distinct pairs (``count`` lines under the header)."""
    return write_pairs(path, [f"the sentence {index}\t{language} Satz {index}" for index in range(count)])


def weighted_settings(tmp_path: Path, de: int, fr: int, weights: dict[str, int], **values) -> BuildSettings:
    """A cross-lingual build of ``de`` German and ``fr`` French pairs with ``language_weights``."""
    german, french = numbered_pairs(tmp_path / "en-de.tsv", de, "de"), numbered_pairs(tmp_path / "en-fr.tsv", fr, "fr")
    return BuildSettings.from_flat(
        languages=["en", "de", "fr"], parallel=[f"de={german}", f"fr={french}"], language_weights=weights, **values
    )


def test_the_build_command_refuses_a_weight_the_pairs_cannot_fill_before_any_stage(tmp_path, no_teacher):
    german, french = numbered_pairs(tmp_path / "en-de.tsv", 40, "de"), numbered_pairs(tmp_path / "en-fr.tsv", 11, "fr")
    arguments = ["build", "--teacher", "never-loaded", "--parallel", f"de={german}", "--parallel", f"fr={french}"]
    arguments += ["--languages", "en,de,fr", "--language-weights", "fr=3", "--batch-size", "4"]
    result = CliRunner().invoke(app, [*arguments, "--out", str(tmp_path / "m"), "--dim", "8"])
    assert_one_error_line(
        result,
        f"error: --language-weights fr=3: the contrastive training takes 3 batches of fr's pairs per round, but its "
        f"pair files (--parallel fr={french}) leave at most 11 training pair(s) (the validation split held out), 2 "
        "batch(es) of 4 (--batch-size): lower its weight to 2 or less, or give fr more pairs.",
    )
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(("fr", "fits"), [(12, True), (11, False)])
def test_a_weight_fits_when_the_pairs_make_that_many_batches(tmp_path, fr, fits):
    settings = weighted_settings(tmp_path, 40, fr, {"fr": 3}, batch_size=4)
    if fits:
        check(settings)  # 12 lines: 3 batches of 4
    else:
        expected = "leave at most 11 training pair(s) (the validation split held out), 2 batch(es) of 4"
        with pytest.raises(SettingsError, match=re.escape(expected)):
            check(settings)


@pytest.mark.parametrize(("weight", "fits"), [(14, True), (15, False)])
def test_the_pairs_held_out_for_validation_do_not_count(tmp_path, weight, fits):
    # 2,000 French pairs make 15 batches of 128, but 128 of them are held out: 1,872 train, 14 batches
    settings = weighted_settings(tmp_path, 2000, 2000, {"fr": weight}, batch_size=128, validation_size=128)
    if fits:
        check(settings)
    else:
        expected = "leave at most 1,872 training pair(s) (the validation split held out), 14 batch(es) of 128"
        with pytest.raises(SettingsError, match=re.escape(expected)):
            check(settings)


def test_extra_pairs_count_toward_the_lines_of_their_language(tmp_path):
    extra = numbered_pairs(tmp_path / "words.tsv", 2, "dictionary")
    check(weighted_settings(tmp_path, 40, 10, {"fr": 3}, batch_size=4, extra_pairs={"fr": str(extra)}))
    expected = f"(--parallel fr={tmp_path / 'en-fr.tsv'}) leave at most 10 training pair(s)"
    with pytest.raises(SettingsError, match=re.escape(expected)):
        check(weighted_settings(tmp_path, 40, 10, {"fr": 3}, batch_size=4))


def test_a_language_with_fewer_pairs_than_a_batch_sets_the_batch_the_check_counts_in(tmp_path):
    # 10 German pairs make the training's batch 10 instead of 16: 30 French lines make 3 batches of it, not 1 of 16
    check(weighted_settings(tmp_path, 10, 30, {"fr": 3}, batch_size=16))
    expected = "3 batch(es) of 10 (--batch-size 16 shrinks to the 10 pairs of en-de): lower its weight to 3"
    with pytest.raises(SettingsError, match=re.escape(expected)):
        check(weighted_settings(tmp_path, 10, 30, {"fr": 4}, batch_size=16))


def test_the_second_pass_counts_its_own_pair_files_in_its_own_batch(tmp_path):
    second_german = numbered_pairs(tmp_path / "second-de.tsv", 20, "de")
    second_french = numbered_pairs(tmp_path / "second-fr.tsv", 20, "fr")
    both = [f"de={second_german}", f"fr={second_french}"]
    values = {"batch_size": 4, "second_pass_batch_size": 8}  # the first pass's 40 lines make 10 batches of 4
    check(weighted_settings(tmp_path, 40, 40, {"fr": 2}, second_pass_pairs=both, **values))
    with pytest.raises(SettingsError) as error:
        check(weighted_settings(tmp_path, 40, 40, {"fr": 3}, second_pass_pairs=both, **values))
    assert str(error.value) == (
        "--language-weights fr=3: the second contrastive pass takes 3 batches of fr's pairs per round, but its pair "
        f"files (--second-pass-pairs fr={second_french}) leave at most 20 training pair(s) (the validation split held "
        "out), 2 batch(es) of 8 (--second-pass-batch-size): lower its weight to 2 or less, or give fr more pairs."
    )
    # a second pass on French pairs alone has no round robin to weigh
    check(weighted_settings(tmp_path, 40, 40, {"fr": 3}, second_pass_pairs=[f"fr={second_french}"], **values))


@pytest.mark.parametrize(
    ("weights", "values"),
    [
        ({"fr": 3}, {"crosslingual_distillation": True}),  # that dataset's batch is known after the extraction only
        ({"fr": 3}, {"loss": "distillation"}),  # no language pair trains
        ({"fr": 1}, {}),  # one batch per round: the plain round robin
    ],
)
def test_a_weight_the_training_may_accept_is_left_to_it(tmp_path, weights, values):
    check(weighted_settings(tmp_path, 40, 11, weights, batch_size=4, **values))


def test_one_paired_language_has_no_round_robin_to_weigh(tmp_path):
    french = numbered_pairs(tmp_path / "en-fr.tsv", 11, "fr")
    check(
        BuildSettings.from_flat(
            languages=["en", "fr"], parallel=[f"fr={french}"], language_weights={"fr": 3}, batch_size=4
        )
    )
