"""A vocabulary size per language (``--language-vocab-sizes de=40000,ko=12000``): parsed, checked against the
table's languages, honoured by the vocabulary, keyed only when given, recorded in the model's metadata."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from typer.testing import CliRunner

from st_static.cli import app
from st_static.cli.build import vocabulary_line
from st_static.cli.options import settings_from_options
from st_static.errors import ModelFolderError
from st_static.extraction.multilingual import MultilingualCorpus, build_multilingual_vocabulary
from st_static.model.metadata import ModelMetadata
from st_static.settings import BuildSettings, ExtractionSettings, SettingsError
from st_static.stages.base import Build
from st_static.stages.extraction import build_vocabulary_from_corpus, extraction_key_settings


def spaceless_teacher_tokenizer() -> Tokenizer:
    pieces = [("<unk>", -20.0), ("\u2581", -3.0), ("東京", -2.0), ("大阪", -2.5), ("に", -2.0), ("行", -3.0)]
    tokenizer = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    return tokenizer


# Words by how many sentences hold them: en "the" 4, "cat" 3, "sat" 2; de "die" 4, "Katze" 3, "Hund" 2;
# ko "고양이" 3, "개" 2; ja "に" 4, "東京" 3, "大阪" 2.
CORPUS = MultilingualCorpus(
    sentences={
        "en": ["the cat sat", "the cat sat", "the cat", "the"],
        "de": ["die Katze Hund", "die Katze Hund", "die Katze", "die"],
        "ko": ["고양이 개", "고양이 개", "고양이"],
        "ja": ["東京に大阪", "東京に大阪", "東京に", "に"],
    },
    pairs={},
)


def words_of(language: str, languages_of: dict[str, list[str]]) -> list[str]:
    return [word for word, languages in languages_of.items() if language in languages]


def test_each_named_language_keeps_its_own_number_of_most_frequent_entries():
    vocabulary, languages_of = build_multilingual_vocabulary(
        CORPUS,
        spaceless_teacher_tokenizer(),
        vocab_size=100,
        spaceless_vocab_size=100,
        min_sentences=2,
        language_vocab_sizes={"de": 2, "ja": 1, "ko": 1},
    )
    assert words_of("de", languages_of) == ["die", "Katze"]  # "Hund" (2 sentences) is beyond de's 2
    assert words_of("ja", languages_of) == ["に"]  # the teacher's tokens, the most frequent first
    assert words_of("ko", languages_of) == ["고양이"]  # Korean has spaces: words, capped like any other
    assert sorted(words_of("en", languages_of)) == ["cat", "sat", "the"]  # not named: --vocab-size (100)
    assert len(vocabulary) == 7
    assert vocabulary.per_language == {"en": 3, "de": 2, "ko": 1, "ja": 1}
    assert vocabulary.report()["per_language"] == vocabulary.per_language  # what stats.json records


def test_the_build_prints_the_entries_each_language_gave():
    line = vocabulary_line({"corpus": 51_000, "per_language": {"en": 40_000, "ko": 12_000}})
    assert line.startswith("Vocabulary: 51,000 corpus words (en 40,000, ko 12,000), no completion")
    assert vocabulary_line({"corpus": 10}) == "Vocabulary: 10 corpus words, no completion."


def test_without_sizes_per_language_the_shared_sizes_apply_as_before():
    _, languages_of = build_multilingual_vocabulary(
        CORPUS, spaceless_teacher_tokenizer(), vocab_size=2, spaceless_vocab_size=3, min_sentences=2
    )
    assert {language: len(words_of(language, languages_of)) for language in CORPUS.sentences} == {
        "en": 2,
        "de": 2,
        "ko": 2,
        "ja": 3,
    }


def test_a_one_language_vocabulary_honours_its_language_size():
    settings = ExtractionSettings(vocab_size=100, language_vocab_sizes={"en": 2})
    vocabulary = build_vocabulary_from_corpus(CORPUS.sentences["en"], settings, spaceless_teacher_tokenizer())
    assert vocabulary.words == ["the", "cat"]


def test_the_size_of_a_language_is_its_entry_else_the_size_of_its_kind():
    settings = ExtractionSettings(vocab_size=50_000, spaceless_vocab_size=20_000, language_vocab_sizes={"ko": 12_000})
    assert [settings.vocabulary_size(language) for language in ("ko", "de", "ja", "zh")] == [
        12_000,
        50_000,
        20_000,
        20_000,
    ]


def test_the_option_is_comma_separated_language_size_pairs():
    settings = settings_from_options({"languages": "en,de,ko", "language_vocab_sizes": "de=40000, ko=12000"})
    assert settings.extraction.language_vocab_sizes == {"de": 40_000, "ko": 12_000}
    assert settings_from_options({"languages": "en,de"}).extraction.language_vocab_sizes is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("de40000", "takes comma-separated KEY=VALUE"),
        ("de=", "takes comma-separated KEY=VALUE"),
        ("de=forty", "'forty' is not an integer"),
        ("de=1,de=2", "names de twice"),
        ("de=0", "de's size must be a positive integer, got 0"),
        ("fr=100", "'fr', which is not one of the table's languages (--languages en,de)"),
    ],
)
def test_a_wrong_option_value_is_a_settings_error_naming_it(text, message):
    with pytest.raises(SettingsError) as error:
        settings_from_options({"languages": "en,de", "language_vocab_sizes": text})
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"de": True}, "positive integer"),
        ({"de": 2.5}, "positive integer"),
        ({"": 10}, "not a language code"),
        ([("de", 10)], "must map languages to sizes"),
    ],
)
def test_the_python_api_checks_the_sizes_too(sizes, message):
    with pytest.raises(SettingsError, match=message):
        ExtractionSettings(language_vocab_sizes=sizes)


def test_no_sizes_is_none_whichever_way_it_is_written():
    assert ExtractionSettings(language_vocab_sizes={}).language_vocab_sizes is None
    assert ExtractionSettings().language_vocab_sizes is None


def test_the_build_command_refuses_a_language_outside_the_table_in_one_line(tmp_path):
    arguments = ["build", "--languages", "en,de", "--language-vocab-sizes", "ko=100", "--out", str(tmp_path / "m")]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 1
    assert "error: language_vocab_sizes names 'ko'" in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "m").exists()


def test_the_extraction_is_keyed_by_the_sizes_only_when_they_are_given():
    plain = extraction_key_settings(BuildSettings(languages=["en", "de"]))
    assert "language_vocab_sizes" not in plain  # the key of a build without them is the key it always had
    sized = extraction_key_settings(
        BuildSettings(languages=["en", "de"], extraction=ExtractionSettings(language_vocab_sizes={"de": 10}))
    )
    assert sized.pop("language_vocab_sizes") == {"de": 10}
    assert sized == plain


def test_the_model_records_the_sizes_it_was_built_with(tmp_path):
    settings = BuildSettings(languages=["en", "ko"], extraction=ExtractionSettings(language_vocab_sizes={"ko": 7}))
    recorded = Build(settings=settings, work_dir=tmp_path).recorded_inputs()
    assert recorded.language_vocab_sizes == {"ko": 7}
    assert ModelMetadata.from_dict(recorded.to_dict()).language_vocab_sizes == {"ko": 7}
    assert Build(settings=BuildSettings(), work_dir=tmp_path).recorded_inputs().language_vocab_sizes is None
    with pytest.raises(ModelFolderError, match=r"language_vocab_sizes\.ko' must be int"):
        ModelMetadata.from_dict({"language_vocab_sizes": {"ko": "7"}})
