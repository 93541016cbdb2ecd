"""More contrastive batches for a language (``--language-weights ja=3``): the weighted round robin over the
language pairs' datasets, the setting and its checks, and a refinement that trains in that order and records it."""

from __future__ import annotations

import json

import pytest
import torch
from sentence_transformers.base.sampler import RoundRobinBatchSampler
from torch.utils.data import BatchSampler, ConcatDataset, RandomSampler

from st_static.cli.options import settings_from_options
from st_static.settings import BuildSettings, RefinementSettings, SettingsError
from st_static.training import HISTORY_FILE_NAME, refine_by_translation
from st_static.training.sampler import WeightedRoundRobinBatchSampler, batches_per_round

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
