"""Regenerate the model cards in ``hub_cards/`` from built models.

``hub_cards/`` holds cards of built models only. For every model in ``SPECS`` whose folder exists under
``--models-dir`` (``DIR/NAME`` with the saved model and its ``evaluation.json``), the card is generated from that
model with ``st_static.model_card.write_model_card``, exactly as ``st-static card DIR/NAME --model-id ORG/NAME``
would (the model folder's README is refreshed too). Cards of models not built here are left as they are.

    python hub_cards/refresh.py --models-dir models [--only swe-all-mpnet-base-v2-256d]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from st_static.model.save_load import load_model
from st_static.model_card import write_model_card

HUB_CARDS = Path(__file__).resolve().parent
DATA = "../shared/data"  # relative to the repository root, where the commands run

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

    def commands(self, models_dir: str) -> str:
        """The commands that build and evaluate the model (run from the repository root)."""
        out = f"{models_dir}/{self.name}"
        prepare = [line.format(models=models_dir) for line in self.prepare]
        build = ["st-static", "build", "--teacher", self.teacher]
        if self.corpus:
            build += ["--corpus", self.corpus.format(models=models_dir)]
        for path in self.parallel:
            build += ["--parallel", path]
        if self.parallel:
            build += ["--languages", ",".join(self.languages)]
        if self.prompt:
            build += ["--prompt", self.prompt]
        if self.removed is not None:
            build += ["--removed-components", str(self.removed)]
        build += [*self.build_options, "--out", out]
        # No --tasks: the dev and test sets and the task files of the model's languages (STS and task-type scores).
        evaluate = ["st-static", "evaluate", out, "--data", DATA, "--json", f"{out}/evaluation.json"]
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
        corpus="{models}/en-60k.txt",
        prepare=("mkdir -p {models}", f"head -n 60000 {DATA}/corpus/en.txt > {{models}}/en-60k.txt"),
        parallel=tuple(f"{DATA}/parallel/en-{other}.tsv" for other in others),
        prompt=prompt,
        lowercase=False,
        build_options=(*options, "--eval-data", DATA),
        # Tables with Chinese or Japanese remove 10 leading components: e5 is anisotropic, and at the PCA stage
        # 10 beats the paper's 3 on Tatoeba, cross-lingual STS and English STS-B (benchmarks/results).
        removed=10 if {"ja", "zh"} & set(others) else None,
    )


@dataclass(frozen=True)
class EnsembleSpec:
    """A published ensemble (Wada et al., 2025, App. D): built members, combined by ``st-static compress``.

    The per-member normalisation is folded into the table over the first lines of ``fold_norms`` so that the
    ensemble loads with a bare ``SentenceTransformer`` like every other card's model.
    """

    name: str
    members: tuple[CardSpec, ...]
    fold_norms: str
    tasks: dict[str, str] = field(default_factory=lambda: dict(STS_EN))

    def commands(self, models_dir: str) -> str:
        out = f"{models_dir}/{self.name}"
        members = [f"{models_dir}/{member.name}" for member in self.members]
        compress = ["st-static", "compress", *members, "--fold-norms", self.fold_norms, "--output", out]
        tasks = ",".join(self.tasks)
        evaluate = ["st-static", "evaluate", out, "--data", DATA, "--tasks", tasks, "--json", f"{out}/evaluation.json"]
        builds = [member.commands(models_dir) for member in self.members]
        return "\n".join([*builds, shlex.join(compress), shlex.join(evaluate)])


MODERN_DATA_LICENSE = (
    "en.txt: WordNet 3.0 licence, Brown corpus (redistribution permitted), public domain; en-modern.txt: CC BY-SA 4.0 "
    "(Wikipedia, WikiText-2, Wikibooks), news articles of their publishers, MIT, Apache-2.0, PDDL-1.0 (each source: "
    "../shared/data/README.md)"
)
# The default since issue 37: en.txt and the modern corpus without its students' chat lines, chosen on the dev sets
# and the task files' dev halves (benchmarks/results/2026-11-26-modern-corpus.md).
MINILM_256 = english(
    "sentence-transformers/all-MiniLM-L6-v2",
    384,
    256,
    options=(
        "--corpus",
        f"{DATA}/corpus/en-modern.txt",
        "--leave-out-sources",
        "chitchat",
        "--data-license",
        MODERN_DATA_LICENSE,
    ),
)
# Chosen on the dev sets (benchmarks/results/2026-11-23-mpnet-distillation-sweep.md).
MPNET_256 = english(
    "sentence-transformers/all-mpnet-base-v2",
    768,
    256,
    removed=3,
    options=("--temperature", "0.1", "--learning-rate", "0.0003"),
)
# EmbeddingGemma (Gemma Terms of Use; the teacher's STS prompt is its registry default): N=3 sentences per word keeps
# the teacher pass on a 2-core CPU under an hour (N=5 reads ~45% more tokens for <= 0.6 on dev with MiniLM). Its PCA
# table's rows are ~300x longer than MiniLM's (mean norm 1,207 vs 3.8) and Adam's steps are absolute, so the learning
# rate is ~300x MiniLM's: 1.0, chosen on the dev sets (benchmarks/results/2026-11-25-gemma-levers-1.md).
GEMMA_256 = english(
    "google/embeddinggemma-300m", 768, 256, options=("--sentences-per-word", "3", "--learning-rate", "1.0")
)
# The e5 four-language recipe with EmbeddingGemma as the teacher (its own STS prompt, bfloat16), at N=3 sentences per
# word instead of 100 (the teacher reads ~8.5x slower than e5-small; N=100 would take many hours on 2 cores) and the
# learning rate scaled with the table's row norms as for GEMMA_256 (0.001 x 300).
GEMMA_FOUR_LANGUAGES = multilingual(
    (("de", "deu"), ("ja", "jpn"), ("zh", "cmn")),
    teacher="google/embeddinggemma-300m",
    teacher_dim=768,
    prompt=None,
    options=("--sentences-per-word", "3", "--steps", "30000", "--batch-size", "128", "--learning-rate", "0.3"),
)
# The GTE-class table (issue 43): nomic-embed-text-v1.5 (Apache-2.0; its registry prompt "clustering: ") over the
# default corpus, with every other setting the MiniLM default (chosen on dev: benchmarks/results/2026-11-26-nomic-*).
NOMIC_256 = english(
    "nomic-ai/nomic-embed-text-v1.5",
    768,
    256,
    options=(
        "--corpus",
        f"{DATA}/corpus/en-modern.txt",
        "--leave-out-sources",
        "chitchat",
        "--data-license",
        MODERN_DATA_LICENSE,
    ),
)
# The same with 512 dimensions (nomic is Matryoshka-trained): task dev mean +1.06 at the same STS, chosen on dev for
# task-heavy use (benchmarks/results/2026-11-26-nomic-full-stages.md).
NOMIC_512 = english(
    "nomic-ai/nomic-embed-text-v1.5",
    768,
    512,
    options=NOMIC_256.build_options[2:-2],
)
# The e5 four-language recipe on the base and the extra translation pairs (issue 44): every pair file of each language,
# nothing filtered out; the licences of the pairs are those of their Debian sources (../shared/data/README.md).
EXTRA_PAIRS_LICENSE = (
    "en-60k.txt (first 60,000 lines of en.txt): WordNet 3.0 licence, Brown corpus, public domain; parallel/en-xx.tsv: "
    "STS-B train/dev translations (stsb-multi-mt, CC BY-SA 4.0 scores, each sentence its dataset's licence), gettext "
    "catalogues of Debian packages (mostly GPL-2+/LGPL-2.1+), Debian Reference (GPL-2+), Ding (GPL-2+); "
    "parallel/extra/en-xx.tsv: Debian 12 packages, each under its own copyright file: GPL-2+/GPL-3+ (games, programs, "
    "manuals), CC BY-SA 3.0 (Cataclysm DDA), MPL-2.0 (LibreOffice help), GFDL (some manuals), the package "
    "maintainers' descriptions (ddtp)"
)
# The base and extra pairs hold 5-9x the base build's sentences: at the legacy recipe's N = 100 and float32 the teacher
# pass would read 19.4 M teacher tokens (2 h 17 min at the 2,363 tokens/s benchmarks.teacher_pass_profile measured on
# these pairs). Capped to an hour of build: each word's 10 shortest sentences (N = 10: 422,072 sentences, 12.4 M
# tokens) with bfloat16 weights (5,522 tokens/s in the build; word vectors within cosine 0.99993 of float32's). The
# contrastive training still sees every pair. The same cap on the base pairs alone gives the base card's Tatoeba
# scores (77.5 / 94.3 / 60.9 against 77.6 / 94.3 / 61.2; benchmarks/results/2026-11-26-crosslingual-extra-pairs.md).
EXTRA_PAIRS_OPTIONS = (
    "--sentences-per-word",
    "10",
    "--teacher-precision",
    "bfloat16",
    *LEGACY_CROSSLINGUAL_OPTIONS[4:],
)
E5_FOUR_LANGUAGES_EXTRA = replace(
    multilingual(
        (("de", "deu"), ("ja", "jpn"), ("zh", "cmn")),
        options=(*EXTRA_PAIRS_OPTIONS, "--data-license", EXTRA_PAIRS_LICENSE),
    ),
    name="swe-multilingual-e5-small-en-de-ja-zh-extra",
    parallel=tuple(
        f"{language}={DATA}/parallel/{folder}en-{language}.tsv"
        for language in ("de", "ja", "zh")
        for folder in ("", "extra/")
    ),
)
SPECS: list[CardSpec | EnsembleSpec] = [
    MINILM_256,
    NOMIC_256,
    NOMIC_512,
    MPNET_256,
    GEMMA_256,
    multilingual((("de", "deu"),)),
    multilingual((("ja", "jpn"),)),
    multilingual((("zh", "cmn"),)),
    multilingual((("de", "deu"), ("ja", "jpn"), ("zh", "cmn"))),
    E5_FOUR_LANGUAGES_EXTRA,
    GEMMA_FOUR_LANGUAGES,
    EnsembleSpec("swe-minilm-mpnet-256x2", (MINILM_256, MPNET_256), fold_norms=f"{DATA}/corpus/en.txt"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models-dir", default="models", help="Folder holding the built models as NAME/.")
    parser.add_argument(
        "--recipe-dir", default="models", help="Models folder the cards' build commands write to (default: models)."
    )
    parser.add_argument("--org", default="st-static", help="Hub organisation of the published models.")
    parser.add_argument("--out-dir", default=str(HUB_CARDS), help="Where the cards go (default: hub_cards/).")
    parser.add_argument("--only", action="append", help="Refresh only this card (repeatable).")
    args = parser.parse_args(argv)
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        model_id = f"{args.org}/{spec.name}"
        target = Path(args.out_dir) / f"{spec.name}.md"
        folder = Path(args.models_dir) / spec.name
        if not (folder / "modules.json").is_file():
            print(f"{target.name}: left as it is ({folder} is not built here)")
            continue
        # The spec's commands, not the recorded one: they use paths relative to the repository, so anyone can
        # rerun them (the model's metadata keeps the command as it was actually typed).
        write_model_card(
            load_model(folder), folder, model_id=model_id, build_command=spec.commands(args.recipe_dir), output=target
        )
        print(f"{target.name}: from the built model in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
