"""Draw the paper's analysis figures for static models (and, for language separation, any model).

    python benchmarks/analysis_figures.py OUT_DIR --model LABEL=PATH [--model ...] [--word-tags brown-tags.tsv]
        [--component 1] [--tatoeba ../shared/data/tatoeba/deu-eng.tsv --sentence-model PATH [--prompt "query: "]]

* norms.png: mean word-vector norm by part of speech, one bar per model (needs --word-tags, from
  brown_pos_tags.py), relative to the largest class; the numbers are printed too.
* component-<i>-<label>.png: the words at both ends of principal component i of each static model.
* language-separation.png: 2-D PCA of the two sides of a Tatoeba file embedded by --sentence-model, before and
  after ABTT, with silhouette scores (printed too).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sentence_transformers import SentenceTransformer  # noqa: E402

from st_static.data_files import read_translation_pairs  # noqa: E402
from st_static.evaluation.analysis import (  # noqa: E402
    component_extremes,
    language_separation,
    mean_norm_by_tag,
    plot_component_extremes,
    plot_language_separation,
    plot_norms_by_tag,
    word_table,
)
from st_static.evaluation.encoders import model_encoder  # noqa: E402
from st_static.evaluation.pos_tags import read_word_tags  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--model", action="append", default=[], help="LABEL=PATH of a static model (repeatable)")
    parser.add_argument("--word-tags", type=Path)
    parser.add_argument("--top-words", type=int, default=10_000)
    parser.add_argument("--component", type=int, default=1)
    parser.add_argument("--tatoeba", type=Path)
    parser.add_argument("--sentence-model")
    parser.add_argument("--prompt")
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)

    tables = {}
    for spec in args.model:
        label, _, path = spec.rpartition("=")
        tables[label or Path(path).name] = word_table(SentenceTransformer(path, device="cpu"))
    if args.word_tags and tables:
        tags = read_word_tags(args.word_tags, limit=args.top_words)
        norms = {label: mean_norm_by_tag(words, vectors, tags) for label, (words, vectors) in tables.items()}
        for label, values in norms.items():
            print(f"norms {label}: " + ", ".join(f"{tag} {value:.2f}" for tag, value in values.items()))
        plot_norms_by_tag(norms).savefig(args.output / "norms.png", dpi=120)
    for label, (words, vectors) in tables.items():
        smallest, largest = component_extremes(words, vectors, (args.component,), 8, args.top_words)[args.component]
        print(f"PC{args.component} {label}: smallest {', '.join(smallest)} | largest {', '.join(largest)}")
        figure = plot_component_extremes(words, vectors, args.component, 10, top_words=args.top_words)
        figure.savefig(args.output / f"component-{args.component}-{label}.png", dpi=120)
    if args.tatoeba and args.sentence_model:
        pairs = read_translation_pairs(args.tatoeba)
        encoder = model_encoder(SentenceTransformer(args.sentence_model, device="cpu"), prompt=args.prompt)
        first = encoder([pair[0] for pair in pairs])
        second = encoder([pair[1] for pair in pairs])
        separation = language_separation(first, second)
        print(f"language separation ({args.tatoeba.name}): {separation}")
        language = args.tatoeba.stem.split("-")[0]
        plot_language_separation(first, second, labels=("eng", language)).savefig(
            args.output / "language-separation.png", dpi=120
        )
    print(f"figures in {args.output}")


if __name__ == "__main__":
    main()
