"""How much of a cross-lingual table's language gap is its teacher's? Cross-lingual against monolingual STS of teachers.

    python -m benchmarks.experiments.teacher_language_gap \
        --teacher e5='TEACHERS/multilingual-e5-small|query: ' \
        --teacher gemma='TEACHERS/embeddinggemma-300m|task: sentence similarity | query: ' \
        --table e5=MODELS/swe-multilingual-e5-small-en-de-ja-zh-extra --data ../shared/data --work runs/teacher-gap \
        --output benchmarks/results/DATE-teacher-language-gap.md

The disentangler (issue 68) and per-language transforms of the four-language table were flat. This script asks
whether the gap (``stsb-XX-test`` minus ``stsb-en-XX-test``: the same STS-B pairs, both sides in one language against
one side in English) is the teacher's, by scoring teachers (``NAME=FOLDER|PROMPT``) and the tables built from them
(``--table NAME=FOLDER``) on the same files. Teachers read each unique text once, shortest first (vectors cached in
``--work``, so a rerun encodes nothing). Every file here is a test file: reported, nothing is chosen on it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, evaluate_sts, load_model, log, machine, write_report
from benchmarks.text_vectors import TextVectors, encode_in_chunks
from st_static.evaluation.sts import read_sts_file

LANGUAGES = ("de", "ja", "zh")


def sts_files(data: Path) -> dict[str, Path]:
    names = [f"stsb-en-{language}-test" for language in LANGUAGES]
    names += [f"stsb-{language}-test" for language in ("en", *LANGUAGES)]
    return {name: data / "sts" / f"{name}.tsv" for name in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--teacher", action="append", default=[], help="NAME=FOLDER|PROMPT (repeat)")
    parser.add_argument("--table", action="append", default=[], help="NAME=FOLDER of a table built from NAME")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()

    files = sts_files(args.data)
    pairs = {name: read_sts_file(path) for name, path in files.items()}
    texts = list(dict.fromkeys(text for scored in pairs.values() for text in scored.sentences1 + scored.sentences2))
    rows: dict[str, dict[str, float]] = {}
    for entry in args.teacher:
        name, _, spec = entry.partition("=")
        folder, _, prompt = spec.partition("|")
        vectors, seconds = encode_in_chunks(folder, texts, args.work, str(Path(folder).resolve()), prompt=prompt)
        table = dict(zip(texts, vectors, strict=True))
        log(f"teacher {name}: {len(texts):,} texts in {seconds:.0f} s")
        rows[f"teacher {name} ({Path(folder).name})"] = {
            file: evaluate_sts(lambda batch, table=table: np.stack([table[text] for text in batch]), path)["score"]
            for file, path in files.items()
        } | {"seconds": seconds}
    for entry in args.table:
        name, _, folder = entry.partition("=")
        encode = TextVectors(load_model(folder))
        rows[f"table of {name} ({Path(folder).name})"] = {
            file: evaluate_sts(encode, path)["score"] for file, path in files.items()
        }

    cross = [f"stsb-en-{language}-test" for language in LANGUAGES]
    mono = [f"stsb-{language}-test" for language in LANGUAGES]
    lines = [
        "# Cross-lingual against monolingual STS: teachers and their tables",
        "",
        f"Command: `{command_line('benchmarks.experiments.teacher_language_gap')}`",
        "",
        f"Machine: {machine()[0]}, the CPU alone. Spearman x100 on the STS-B test files (reported only; nothing is "
        f"chosen). {len(texts):,} unique texts. Gap: the mean of `stsb-XX-test` minus the mean of `stsb-en-XX-test` "
        "over de, ja, zh (the same pairs, one side in English).",
        "",
        "| model | " + " | ".join(files) + " | cross-lingual mean | monolingual mean (de, ja, zh) | gap | encode s |",
        "|---|" + "---:|" * (len(files) + 4),
    ]
    for name, scores in rows.items():
        cross_mean = float(np.mean([scores[file] for file in cross]))
        mono_mean = float(np.mean([scores[file] for file in mono]))
        cells = [f"{scores[file]:.2f}" for file in files]
        cells += [f"{cross_mean:.2f}", f"{mono_mean:.2f}", f"{mono_mean - cross_mean:.2f}"]
        cells.append(f"{scores['seconds']:.0f}" if "seconds" in scores else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    write_report(args.output, lines, rows)


if __name__ == "__main__":
    main()
