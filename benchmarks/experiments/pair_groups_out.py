"""Which source groups of one language's extra translation pairs does the contrastive training want? Leave one
group out at a time, from a finished cross-lingual build's cache.

    python -m benchmarks.experiments.pair_groups_out --work MODELS/x.work --data ../shared/data \
        --corpus MODELS/en-60k.txt --languages en,de,ja,zh \
        --parallel de=DATA/parallel/en-de.tsv --parallel de=DATA/parallel/extra/en-de.tsv ... \
        --prompt 'query: ' --set removed_components=10,sentences_per_word=10,teacher_precision=bfloat16 \
        --set teacher=TEACHERS/multilingual-e5-small,batch_size=128,learning_rate=0.001 --language de --steps 10000 \
        --output benchmarks/results/DATE-pair-groups-out.md

The build's settings (the same ``--corpus``, ``--parallel``, ``--languages``, ``--prompt`` and other settings) name its
extraction, completion and PCA folders in ``--work``; they must be there: this script runs no teacher. Then the
contrastive stage is trained again at ``--steps`` (a reduced size) once on every pair (``all pairs``) and once for
each source group of ``--language``'s extra files (``pair_sources.GROUPS``, read from their ``.source.txt``) with
that group's rows left out (and, with ``--control-rows N``, once without N rows drawn at random from the extra
files: what leaving out rows of every kind does); the other languages keep all their pairs, and the table keeps
every row (the extraction read every pair). Unlike ``pair_sources.py`` (one build per group, a teacher pass each),
this measures what each group gives the training alone, in minutes a variant.

Scores (x100) after the contrastive stage: Tatoeba both ways on the public files, which are the dev halves (they
and English STS-B dev choose), and the cross-lingual STS-B test files (reported only). Each variant's table is kept
in ``WORK/groups-out/`` and reused by a re-run.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import command_line, log, parse_settings, write_report
from benchmarks.experiments.pair_sources import GROUPS, group_of, scores, source_names

ALL_PAIRS = "all pairs"
CONTROL = "random rows"


def slug(text: str) -> str:
    """A folder name for a variant."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def group_counts(paths: list[Path]) -> Counter[str]:
    """Rows per source group over the files that have a ``.source.txt``."""
    counts: Counter[str] = Counter()
    for path in paths:
        if path.with_name(path.stem + ".source.txt").is_file():
            counts.update(group_of(source) for source in source_names(path))
    return counts


def language_pairs(paths: list[Path], left_out: str | None) -> list[tuple[str, str]]:
    """The pairs of ``paths`` in the build's order, without the rows of group ``left_out`` (files without a
    ``.source.txt`` are read whole)."""
    from st_static.extraction.pair_sources import SourceFilter, read_pairs

    if left_out is None:
        return [pair for path in paths for pair in read_pairs(path)]
    sources = sorted(
        {
            source
            for path in paths
            if path.with_name(path.stem + ".source.txt").is_file()
            for source in source_names(path)
            if group_of(source) == left_out
        }
    )
    source_filter = SourceFilter.of(None, sources)
    return [pair for path in paths for pair in read_pairs(path, source_filter)]


def without_random_rows(paths: list[Path], count: int, seed: int = 0) -> list[tuple[str, str]]:
    """The pairs of ``paths`` without ``count`` rows drawn at random (seeded) from the files with a ``.source.txt``
    (the control: as many rows left out as a group has, of every kind)."""
    from st_static.data_files import read_translation_pairs

    rows = [(path, pair) for path in paths for pair in read_translation_pairs(path)]
    candidates = [index for index, (path, _) in enumerate(rows) if path.with_name(path.stem + ".source.txt").is_file()]
    dropped = set(random.Random(seed).sample(candidates, min(count, len(candidates))))
    cleaned = [
        (" ".join(first.split()), " ".join(second.split()))
        for index, (_, (first, second)) in enumerate(rows)
        if index not in dropped
    ]
    return [(first, second) for first, second in cleaned if first and second]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True, help="the finished build's work folder")
    parser.add_argument("--data", type=Path, required=True, help="the data folder (sts/, tatoeba/)")
    parser.add_argument("--corpus", action="append", default=[], help="the build's --corpus (repeat)")
    parser.add_argument("--parallel", action="append", required=True, help="the build's --parallel LANG=FILE")
    parser.add_argument("--languages", required=True, help="the build's --languages, e.g. en,de,ja,zh")
    parser.add_argument("--prompt", help="the build's --prompt (kept as given, trailing space included)")
    parser.add_argument("--set", action="append", default=[], help="the build's other settings, name=value,...")
    parser.add_argument(
        "--language", default="de", help="whose extra pairs' groups are left out (comma-separated: all of them at once)"
    )
    parser.add_argument("--steps", type=int, default=10000, help="contrastive steps of every variant")
    parser.add_argument(
        "--groups", help="comma-separated groups to leave out (default: every group with rows; none: all pairs only)"
    )
    parser.add_argument(
        "--control-rows", type=int, default=0, help="also a variant without this many random rows of the extra files"
    )
    parser.add_argument(
        "--extra-pairs", action="append", default=[], help="LANG=FILE training-only pairs (the build's --extra-pairs)"
    )
    parser.add_argument("--tag", default="", help="names these variants' folders and rows (for other --set values)")
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from st_static.files import folder_lock
    from st_static.model.save_load import load_model
    from st_static.pipeline.run import STAGES, prepare_build
    from st_static.settings import BuildSettings
    from st_static.stages.base import StageTimer, plan_folders
    from st_static.stages.refinement import TRAINING_FOLDER, refine_table
    from st_static.training.records import HISTORY_FILE_NAME

    languages = arguments.languages.split(",")
    overrides = {**parse_settings(arguments.set), "steps": arguments.steps}
    if arguments.prompt is not None:
        overrides["prompt"] = arguments.prompt
    if arguments.extra_pairs:
        overrides["extra_pairs"] = dict(item.split("=", 1) for item in arguments.extra_pairs)
    settings = BuildSettings.from_flat(
        corpus=arguments.corpus or None, parallel=arguments.parallel, languages=languages, **overrides
    )
    cached = STAGES[:3]  # extraction, completion, PCA
    build = prepare_build(settings, arguments.work)
    missing = [str(folder) for folder in plan_folders(build, cached).values() if not folder.is_dir()]
    if missing:
        raise SystemExit(f"error: the build's cached stages are not in {arguments.work}: {', '.join(missing)}")
    with folder_lock(arguments.work):
        StageTimer(None).run(build, cached)
    if build.multilingual is None:
        raise SystemExit("error: these settings are not a cross-lingual build")
    changed = arguments.language.split(",")
    files = {language: [Path(path) for path in settings.parallel_files()[language]] for language in changed}
    counts = group_counts([path for paths in files.values() for path in paths])
    if arguments.groups == "none":  # all pairs only (e.g. other settings through --set and --tag)
        groups = []
    else:
        groups = arguments.groups.split(",") if arguments.groups else [group for group in GROUPS if counts[group]]
        groups += [group for group in counts if group not in GROUPS and not arguments.groups]
    log(f"{arguments.language} rows per group: {dict(counts)}")

    rows: list[dict[str, Any]] = []
    control = [CONTROL] if arguments.control_rows else []
    for left_out in [None, *groups, *control]:
        name = ALL_PAIRS if left_out is None else f"without {left_out}"
        pairs = dict(build.multilingual.pairs)
        for language in changed:
            if left_out == CONTROL:
                name = f"without {arguments.control_rows:,} random rows"
                pairs[(languages[0], language)] = without_random_rows(files[language], arguments.control_rows)
            else:
                pairs[(languages[0], language)] = language_pairs(files[language], left_out)
        suffix = "" if left_out is None or len(changed) == 1 else "-" + "-".join(changed)
        tag = f"-{slug(arguments.tag)}" if arguments.tag else ""
        folder = arguments.work / "groups-out" / f"{slug(name)}{suffix}{tag}-{arguments.steps}"
        name += f" ({arguments.tag})" if arguments.tag else ""
        started = time.perf_counter()
        if not (folder / "modules.json").is_file():
            with folder_lock(arguments.work):
                # A copy: the training changes the table it is given, and every variant starts from the PCA table.
                refine_table(copy.deepcopy(build.reduced), build.extracted(), settings, folder, pairs)
        seconds = time.perf_counter() - started
        training = json.loads((folder / TRAINING_FOLDER / HISTORY_FILE_NAME).read_text(encoding="utf-8"))
        result = scores(load_model(folder), arguments.data, languages)
        for language in languages[1:]:
            both = (result[f"tatoeba-{language} x->en"], result[f"tatoeba-{language} en->x"])
            result[f"tatoeba-{language} mean"] = sum(both) / 2
        row = {
            "variant": name,
            "pairs": sum(len(pairs[(languages[0], language)]) for language in changed),
            "left_out_rows": arguments.control_rows if left_out == CONTROL else counts[left_out] if left_out else 0,
            "seconds": seconds,
            "best_step": training.get("best_step"),
            **result,
        }
        rows.append(row)
        log(json.dumps(row))
    write_report(arguments.output, table(rows, languages, arguments), rows)


def table(rows: list[dict[str, Any]], languages: list[str], arguments: argparse.Namespace) -> list[str]:
    """The markdown report: one row per variant, its differences to ``all pairs`` in the choosing columns."""
    others = languages[1:]
    columns = ["stsb-en-dev", *(f"tatoeba-{language} mean" for language in others), "tatoeba dev mean"]
    reported = [f"stsb-en-{language}-test" for language in others]
    reference = rows[0]
    lines = [
        f"# {arguments.language} extra pairs, one source group left out of the contrastive training at a time",
        "",
        f"Command: `{command_line('benchmarks.experiments.pair_groups_out')}`",
        "",
        f"Every row: the cached PCA table of the build in `{arguments.work.name}`, {arguments.steps:,} contrastive "
        f"steps; only the {arguments.language} pairs change (pairs: theirs). Scores x100; Tatoeba: mean of both "
        "directions on the public dev halves; stsb-en-xx-test: test files, reported only. In brackets: the change "
        "against all pairs.",
        "",
        "| variant | pairs | rows left out | " + " | ".join(columns) + " | " + " | ".join(reported) + " | seconds |",
        "|---" * (4 + len(columns) + len(reported)) + "|",
    ]
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column, float("nan"))
            delta = "" if row is reference else f" ({value - reference[column]:+.2f})"
            cells.append(f"{value:.2f}{delta}")
        cells += [f"{row.get(column, float('nan')):.2f}" for column in reported]
        lines.append(
            f"| {row['variant']} | {row['pairs']:,} | {row['left_out_rows']:,} | "
            + " | ".join(cells)
            + f" | {row['seconds']:.0f} |"
        )
    return lines


if __name__ == "__main__":
    main()
