"""Cross-lingual vocabulary: words per language, teacher tokens for Japanese, shared entries, sentence samples."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from st_static.extraction.multilingual import build_multilingual_vocabulary, read_multilingual_corpus
from st_static.extraction.vocabulary import count_teacher_token_sentences
from st_static.model.tokenization import build_word_tokenizer


def japanese_teacher_tokenizer() -> Tokenizer:
    pieces = [("<unk>", -20.0), ("\u2581", -3.0), ("東京", -2.0), ("に", -2.0), ("行", -3.0), ("きます", -2.0)]
    pieces += [("大阪", -2.0), ("へ", -2.0), ("the", -2.0), ("\u2581the", -2.0)]
    tokenizer = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=False))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    return tokenizer


@pytest.fixture
def parallel_files(tmp_path):
    de = tmp_path / "en-de.tsv"
    de.write_text("en\tother\nThe cat sleeps\tDie Katze schläft\nthe cat eats\tdie Katze isst\nDie young\tDie jung\n")
    ja = tmp_path / "en-ja.tsv"
    ja.write_text("en\tother\nI go to Tokyo\t東京に行きます\nI go to Osaka\t大阪に行きます\n")
    return [str(de), str(ja)]


def test_corpus_holds_sentences_per_language_and_pairs(parallel_files):
    corpus = read_multilingual_corpus(parallel_files, ["en", "de", "ja"], monolingual={"en": ["the end"]})
    assert corpus.pairs[("en", "de")][0] == ("The cat sleeps", "Die Katze schläft")
    assert corpus.sentences["ja"] == ["東京に行きます", "大阪に行きます"]
    assert "the end" in corpus.sentences["en"]
    assert len(corpus.sample_per_language(1)) == 3  # one sentence of every language


def test_the_number_of_files_must_match_the_languages(parallel_files):
    with pytest.raises(ValueError, match="need 2 parallel file"):
        read_multilingual_corpus(parallel_files[:1], ["en", "de", "ja"])


def test_vocabulary_per_language_with_shared_entries(parallel_files):
    corpus = read_multilingual_corpus(parallel_files, ["en", "de", "ja"])
    vocabulary, languages = build_multilingual_vocabulary(
        corpus, japanese_teacher_tokenizer(), vocab_size=100, spaceless_vocab_size=100, min_sentences=2
    )
    words = set(vocabulary.words)
    assert {"the", "cat", "go", "to"} <= words  # English lowercased
    assert {"Katze", "Die"} <= words and "katze" not in words  # German keeps its case
    assert {"に", "行", "きます"} <= words  # Japanese: teacher tokens in two sentences
    assert "東京" not in words  # in one Japanese sentence only: too rare, reported
    assert vocabulary.too_rare["東京"] == 1
    assert not vocabulary.lowercase
    assert languages["Die"] == ["de"]
    assert "i" in words and languages["i"] == ["en"]


def test_teacher_tokens_with_punctuation_become_words():
    # "・" is Katakana punctuation: the word pipeline splits on it, so it can never be a vocabulary entry.
    pieces = [("<unk>", -20.0), ("\u2581", -3.0), ("・", -2.0), ("・アメリカ", -1.0), ("東京", -2.0), ("。", -2.0)]
    teacher = Tokenizer(models.Unigram(pieces, unk_id=0, byte_fallback=False))
    teacher.pre_tokenizer = pre_tokenizers.Metaspace()
    counts = count_teacher_token_sentences(["東京・アメリカ。", "・東京・"], teacher)
    assert counts == {"東京": 2, "アメリカ": 1}
    build_word_tokenizer(list(counts), lowercase=False)  # every entry is a single word


def test_one_table_reads_every_language(parallel_files):
    corpus = read_multilingual_corpus(parallel_files, ["en", "de", "ja"])
    vocabulary, _ = build_multilingual_vocabulary(
        corpus, japanese_teacher_tokenizer(), vocab_size=100, spaceless_vocab_size=100, min_sentences=1
    )
    tokenizer = build_word_tokenizer(vocabulary.words, lowercase=vocabulary.lowercase)
    tokens = tokenizer.encode("The Katze 東京に行きます", add_special_tokens=False).tokens
    assert tokens == ["The", "Katze", "東京", "##に", "##行", "##きます"]


def test_full_width_digits_and_letters_inside_a_run_no_longer_make_the_whole_run_unknown(parallel_files):
    from st_static.model.tokenization import DROPPED, token_targets

    corpus = read_multilingual_corpus(parallel_files, ["en", "de", "ja"])
    vocabulary, _ = build_multilingual_vocabulary(
        corpus, japanese_teacher_tokenizer(), vocab_size=100, spaceless_vocab_size=100, min_sentences=1
    )
    tokenizer = build_word_tokenizer(vocabulary.words, lowercase=vocabulary.lowercase)
    targets, _ = token_targets(tokenizer)
    # One run of letters and digits (the pre-tokeniser splits at neither): before, U+FF12 (which no key read) made the
    # whole run [UNK], so the text read no row. Now the full-width characters are dropped and the words are read.
    for text, words in (
        ("東京に\uff12\uff10日行きます", ["東京", "##に", "##行", "##きます"]),
        ("\uff23\uff24々東京", ["##東京"]),
    ):
        encoding = tokenizer.encode(text, add_special_tokens=False)
        read = [token for token, token_id in zip(encoding.tokens, encoding.ids, strict=True) if targets[token_id] >= 0]
        assert read == words
        assert all(
            targets[token_id] == DROPPED for token_id in encoding.ids if tokenizer.id_to_token(token_id) not in read
        )


def test_a_fallback_layout_gives_an_older_tokenizer_the_keys_of_space_less_runs(parallel_files):
    import json

    from st_static.model.tokenization import add_fallback_layout, spaceless_run_keys, token_targets

    corpus = read_multilingual_corpus(parallel_files, ["en", "de", "ja"])
    vocabulary, _ = build_multilingual_vocabulary(
        corpus, japanese_teacher_tokenizer(), vocab_size=100, spaceless_vocab_size=100, min_sentences=1
    )
    current = build_word_tokenizer(vocabulary.words, lowercase=vocabulary.lowercase)
    # A tokenizer built before the run keys existed: the same one without the keys of the marks and full-width forms.
    state = json.loads(current.to_str())
    missing = {
        key for key in spaceless_run_keys() if "\u3005" <= key[-1] <= "\u3007" or "\uff10" <= key[-1] <= "\uff5a"
    }
    kept = [
        token for token, _ in sorted(state["model"]["vocab"].items(), key=lambda item: item[1]) if token not in missing
    ]
    state["model"]["vocab"] = {token: index for index, token in enumerate(kept)}
    older = Tokenizer.from_str(json.dumps(state))
    assert older.encode("東京\u3006", add_special_tokens=False).tokens == ["[UNK]"]
    assert older.encode("東京\uff12", add_special_tokens=False).tokens == ["[UNK]"]

    upgraded = add_fallback_layout(older, ["。"])
    targets, num_words = token_targets(upgraded)
    assert upgraded.encode("東京\u3006", add_special_tokens=False).tokens[1:] == ["東京", "##\u3006"]
    # The fallback layout reads NFKC: the full-width digit is its ASCII digit.
    assert upgraded.encode("東京\uff12", add_special_tokens=False).tokens[1:] == ["東京", "##2"]
    # The words keep their rows; the new keys read none.
    old_targets, _ = token_targets(older)
    assert num_words == len(vocabulary.words) + 2  # the sentinel and "。"
    vocab = upgraded.get_vocab()
    assert all(targets[vocab[word]] == old_targets[older.get_vocab()[word]] for word in vocabulary.words)
    assert all(targets[vocab[key]] == -1 for key in missing)


def test_a_long_unpunctuated_run_is_read_in_pieces_not_as_one_unknown_word(parallel_files, tmp_path):
    import json

    import numpy as np
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Normalize

    import st_static
    from st_static.model.folder_checks import tokenizer_structure_problem
    from st_static.model.tokenization import (
        DEFAULT_MAX_WORD_CHARS,
        NFC_SPACELESS_ISOLATED_PATTERN,
        add_fallback_layout,
        word_pre_tokenizer,
    )

    corpus = read_multilingual_corpus(parallel_files, ["en", "de", "ja"])
    vocabulary, _ = build_multilingual_vocabulary(
        corpus, japanese_teacher_tokenizer(), vocab_size=100, spaceless_vocab_size=100, min_sentences=1
    )
    current = build_word_tokenizer(vocabulary.words, lowercase=vocabulary.lowercase)
    # A tokenizer built before the cut: the same one with the plain pre-tokeniser, which makes any run longer than
    # WordPiece's limit one word, read as [UNK].
    state = json.loads(current.to_str())
    state["pre_tokenizer"] = json.loads(word_pre_tokenizer().__getstate__())
    older = Tokenizer.from_str(json.dumps(state))
    sentence = "東京に行きます"
    run = sentence * 30  # 210 characters without a separator
    assert len(run) > DEFAULT_MAX_WORD_CHARS and older.encode(run).tokens == ["[UNK]"]

    for tokenizer in (current, add_fallback_layout(older, ["。"])):  # built now, or given the cut by a layout
        assert tokenizer_structure_problem(json.loads(tokenizer.to_str())) is None
        encoding = tokenizer.encode(run)
        assert "[UNK]" not in encoding.tokens
        # Only the words a cut falls inside (one every 100 characters) are read otherwise.
        assert encoding.tokens.count("東京") + encoding.tokens.count("##東京") >= 30 - 2
        short = sentence * 10  # shorter runs are read exactly as before
        assert tokenizer.encode(short).tokens[-40:] == older.encode(short).tokens[-40:]
    assert tokenizer_structure_problem(json.loads(older.to_str())) is None  # older folders still load
    # The fallback layout reads NFKC: full-width digits inside a run become ASCII ones, and the cut still falls.
    with_digits = ("東京に\uff12\uff10行きます" * 20)[:150]
    laid_out = add_fallback_layout(older, ["。"])
    assert "[UNK]" not in laid_out.encode(with_digits).tokens
    # A run's cut starts at a space-less character: an ASCII word alone is read as in any table (too long: dropped).
    assert laid_out.encode("x" * 150).tokens[1:] == ["[UNK]"]
    nfc_layout = json.loads(laid_out.to_str())
    nfc_layout["pre_tokenizer"]["pretokenizers"][1]["pattern"]["Regex"] = NFC_SPACELESS_ISOLATED_PATTERN
    assert tokenizer_structure_problem(nfc_layout) is None  # the cut of tables laid out before NFKC still loads

    vectors = np.random.default_rng(0).standard_normal((len(vocabulary.words), 8)).astype(np.float32)
    module = st_static.StaticWordAverage.from_word_vectors(vocabulary.words, vectors, lowercase=vocabulary.lowercase)
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu")
    model.save(str(tmp_path / "model"))
    bare = SentenceTransformer(str(tmp_path / "model"), device="cpu")
    embeddings = bare.encode([run, sentence, ""])
    np.testing.assert_allclose(embeddings, st_static.encode(model, [run, sentence, ""]), atol=1e-5)
    assert float(embeddings[0] @ embeddings[1]) > 0.95  # the run reads its sentence's words, not nothing
