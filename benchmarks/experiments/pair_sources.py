"""Which kinds of extra translation pairs help a cross-lingual table? One build per source group, scored on dev sets.

    python -m benchmarks.experiments.pair_sources --teacher TEACHERS/multilingual-e5-small --languages en,de,ja,zh \
        --data ../shared/data --work runs/pair-sources.work \
        --set removed_components=10 --output benchmarks/results/DATE-pair-sources.md

Builds (``st_static.distill``, one shared ``--work`` folder, so a re-run resumes and reuses finished stages):

- ``base only``: the base pair files (default ``DATA/parallel/en-xx.tsv``);
- ``base + all extra``: they and the extra files (default ``DATA/parallel/extra/en-xx.tsv``);
- ``base + GROUP`` for each source group of the extra files: only that group's rows of the extra files
  (``keep_sources`` = the group's source names, read from the aligned ``.source.txt`` files).

"Each group alone" rather than "all but one group": as many builds (groups + 2), but each reads one group's pairs
instead of all but one, so the teacher passes together read the extra text about once instead of groups - 1 times;
a group whose row beats ``base only`` helps on its own. The groups are those of the data README
(``parallel/extra``); a source no group names falls in ``UI and program messages`` when it is a ``mo.*`` package,
else in ``other``.

Scores (x100): Tatoeba accuracy both ways on the public files, which are the dev halves (the choosing columns, and
their mean); English STS-B dev; the cross-lingual STS-B files, which exist only as test splits: reported, never
chosen on. ``--max-pairs N`` takes at most N rows of each base file and of each group in each extra file (a seeded
sample, files written to ``WORK/pairs/``): a quick run that proves the script, not a result. ``--plan`` runs no
teacher: it prints what each build would read (pairs per language, the sentences the extraction selects and their
teacher tokens), to size a full run from the teacher's tokens per second.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.common import command_line, default_data_dir, log, parse_settings, write_report

GROUPS: dict[str, tuple[str, ...]] = {
    "game text": ("mo.cataclysm-dda-data", "mo.wesnoth-*", "mo.freeciv-*", "mo.minetest*", "mo.ufoai*"),
    "software help": (
        "lohelp",
        "gimp-help",
        "*-user-guide",
        "gnome-user-docs",
        "gnome-devel-docs",
        "evolution-help",
        "firefox",
    ),
    "package descriptions": ("ddtp",),
    "Debian manuals": (
        "debian-handbook",
        "installation-guide",
        "developers-reference",
        "debian-faq",
        "maint-guide",
        "debian-edu-doc",
        "debian-reference",
        "aptitude-doc",
    ),
    "man pages": ("manpages*",),
    "dictionary examples": ("freedict",),
    "UI and program messages": ("mo.*",),  # after game text: the other mo.* packages
}
"""Source groups of ``parallel/extra`` (data README), in the order a source is matched."""
TATOEBA = {"de": "deu", "ja": "jpn", "zh": "cmn"}


def group_of(source: str) -> str:
    """The group a source name belongs to (the first whose globs match it), else ``other``."""
    for group, patterns in GROUPS.items():
        if any(fnmatch.fnmatchcase(source, pattern) for pattern in patterns):
            return group
    return "other"


def read_rows(path: Path) -> tuple[str, list[str]]:
    """The header line and the data lines of a pair file (as the library reads them: empty lines skipped)."""
    lines = path.read_text(encoding="utf-8").split("\n")
    return lines[0], [line for line in lines[1:] if line]


def source_names(path: Path) -> list[str]:
    """The aligned ``.source.txt`` of a pair file, one name per row."""
    sources_path = path.with_name(path.stem + ".source.txt")
    if not sources_path.is_file():
        raise SystemExit(f"error: {path} has no {sources_path.name}: the groups need it")
    lines = sources_path.read_text(encoding="utf-8").split("\n")
    return [line.strip() for line in (lines[:-1] if lines[-1] == "" else lines)]


def sampled(paths: dict[str, Path], max_pairs: int, folder: Path, grouped: bool, seed: int = 0) -> dict[str, Path]:
    """Copies of ``paths`` with at most ``max_pairs`` rows (per group when ``grouped``), with aligned sources."""
    copies: dict[str, Path] = {}
    for language, path in paths.items():
        header, rows = read_rows(path)
        sources = source_names(path) if grouped else ["-"] * len(rows)
        by_group: dict[str, list[int]] = {}
        for index, source in enumerate(sources):
            by_group.setdefault(group_of(source) if grouped else "-", []).append(index)
        rng = random.Random(seed)
        keep = sorted(
            index
            for indices in by_group.values()
            for index in (indices if len(indices) <= max_pairs else rng.sample(indices, max_pairs))
        )
        copy = folder / ("extra" if grouped else "base") / path.name
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(header + "\n" + "".join(rows[index] + "\n" for index in keep), encoding="utf-8")
        if grouped:
            sources_copy = copy.with_name(copy.stem + ".source.txt")
            sources_copy.write_text("".join(sources[index] + "\n" for index in keep), encoding="utf-8")
        copies[language] = copy
    return copies


def scores(model: Any, data: Path, languages: list[str]) -> dict[str, float]:
    """Tatoeba both ways (dev halves), English STS-B dev, cross-lingual STS-B test (reported only)."""
    from st_static.evaluation import evaluate_sts, evaluate_translation_retrieval, model_encoder

    encoder = model_encoder(model)
    result: dict[str, float] = {"stsb-en-dev": evaluate_sts(encoder, data / "sts" / "stsb-en-dev.tsv")["score"]}
    tatoeba = []
    for language in languages[1:]:
        retrieval = evaluate_translation_retrieval(encoder, data / "tatoeba" / f"{TATOEBA[language]}-eng.tsv")
        result[f"tatoeba-{language} x->en"] = retrieval["accuracy_2_to_1"]
        result[f"tatoeba-{language} en->x"] = retrieval["accuracy_1_to_2"]
        tatoeba += [retrieval["accuracy_2_to_1"], retrieval["accuracy_1_to_2"]]
        cross = data / "sts" / f"stsb-en-{language}-test.tsv"
        if cross.is_file():
            result[f"stsb-en-{language}-test"] = evaluate_sts(encoder, cross)["score"]
    result["tatoeba dev mean"] = sum(tatoeba) / len(tatoeba)
    return result


def plan_row(files: dict[str, list[Path]], keep: list[str] | None, languages: list[str], args: Any) -> dict:
    """What one build would read: pairs per language, selected sentences, their teacher tokens (no teacher pass)."""
    from st_static.extraction.multilingual import build_multilingual_vocabulary, read_multilingual_corpus
    from st_static.extraction.pair_sources import SourceFilter
    from st_static.extraction.selection import select_sentences
    from st_static.extraction.teacher_model import load_teacher_tokenizer
    from st_static.model.tokenization import build_word_tokenizer
    from st_static.settings import ExtractionSettings

    known = ExtractionSettings.__dataclass_fields__
    chosen = {name: value for name, value in parse_settings(args.set).items() if name in known}
    extraction = ExtractionSettings(teacher=args.teacher, **chosen)
    teacher_tokenizer = load_teacher_tokenizer(args.teacher)
    corpus = read_multilingual_corpus(
        {language: [str(path) for path in paths] for language, paths in files.items()},
        languages,
        source_filter=SourceFilter.of(keep, None),
    )
    vocabulary, _ = build_multilingual_vocabulary(
        corpus,
        teacher_tokenizer,
        vocab_size=extraction.vocab_size,
        spaceless_vocab_size=extraction.spaceless_vocab_size,
        min_sentences=extraction.min_sentences,
    )
    word_tokenizer = build_word_tokenizer(vocabulary.words, teacher_tokenizer, lowercase=vocabulary.lowercase)
    selection = select_sentences(
        corpus.all_sentences(),
        word_tokenizer,
        sentences_per_word=extraction.sentences_per_word,
        max_words=extraction.max_words,
        pca_sample_size=0,
    )
    prompt = extraction.with_teacher_prompt().prompt or ""
    tokens = 0
    for start in range(0, len(selection.sentences), 10_000):
        batch = [prompt + text for text in selection.sentences[start : start + 10_000]]
        tokens += sum(len(encoding.ids) for encoding in teacher_tokenizer.encode_batch(batch))
    return {
        "pairs": {pair[1]: len(rows) for pair, rows in corpus.pairs.items()},
        "words": len(vocabulary.words),
        "selected_sentences": len(selection.sentences),
        "teacher_tokens": tokens,
    }


def language_files(items: list[str] | None, languages: list[str], default: str) -> dict[str, Path]:
    """``LANG=FILE`` items (default: ``default`` formatted with each paired language)."""
    if not items:
        return {language: Path(default.format(language=language)) for language in languages[1:]}
    files: dict[str, Path] = {}
    for item in items:
        language, separator, path = item.partition("=")
        if not separator or language not in languages[1:]:
            raise SystemExit(f"error: expected LANG=FILE with LANG one of {languages[1:]}, got {item!r}")
        files[language] = Path(path)
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", required=True)
    parser.add_argument("--languages", default="en,de,ja,zh")
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--base", action="append", metavar="LANG=FILE", help="default: DATA/parallel/en-LANG.tsv")
    parser.add_argument("--extra", action="append", metavar="LANG=FILE", help="default: DATA/parallel/extra/...")
    parser.add_argument("--corpus", type=Path, default=None, help="an English corpus every build also reads")
    parser.add_argument("--work", type=Path, required=True, help="the shared stage cache")
    parser.add_argument("--set", action="append", default=[], help="build settings name=value,... for every build")
    parser.add_argument("--max-pairs", type=int, default=None, help="rows per base file and per group and extra file")
    parser.add_argument("--only", default=None, help="comma-separated rows to build (base, all, or group names)")
    parser.add_argument("--plan", action="store_true", help="no builds: what each build's teacher pass would read")
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()

    import st_static

    languages = [language.strip() for language in args.languages.split(",")]
    base = language_files(args.base, languages, str(args.data / "parallel" / "en-{language}.tsv"))
    extra = language_files(args.extra, languages, str(args.data / "parallel" / "extra" / "en-{language}.tsv"))
    if args.max_pairs is not None:
        base = sampled(base, args.max_pairs, args.work / "pairs", grouped=False)
        extra = sampled(extra, args.max_pairs, args.work / "pairs", grouped=True)
    sources = {language: Counter(source_names(path)) for language, path in extra.items()}
    names_of: dict[str, set[str]] = {}
    for counts in sources.values():
        for source in counts:
            names_of.setdefault(group_of(source), set()).add(source)
    groups = [group for group in [*GROUPS, "other"] if group in names_of]
    group_sizes = {
        group: {language: sum(counts[name] for name in names_of[group]) for language, counts in sources.items()}
        for group in groups
    }
    variants: list[tuple[str, dict[str, list[Path]], list[str] | None]] = [
        ("base only", {language: [path] for language, path in base.items()}, None),
        ("base + all extra", {language: [base[language], extra[language]] for language in base}, None),
    ]
    for group in groups:
        files = {language: [base[language], extra[language]] for language in base}
        variants.append((f"base + {group}", files, sorted(names_of[group])))
    if args.only:
        wanted = {item.strip() for item in args.only.split(",")}
        short = {"base only": "base", "base + all extra": "all"}
        variants = [variant for variant in variants if short.get(variant[0], variant[0][7:]) in wanted]
    if args.plan:
        plans = {}
        for name, files, keep in variants:
            started = time.perf_counter()
            plans[name] = plan_row(files, keep, languages, args)
            log(f"{name}: {json.dumps(plans[name])} ({time.perf_counter() - started:.0f} s)")
        lines = [
            f"# What each build of the pair-source ablation reads ({'-'.join(languages)}, no teacher pass)",
            "",
            f"Command: `{command_line('benchmarks.experiments.pair_sources')}`",
            "",
            "| variant | pairs | words | selected sentences | teacher tokens |",
            "|---|---|---:|---:|---:|",
        ]
        for name, plan in plans.items():
            pairs = ", ".join(f"{language} {count:,}" for language, count in plan["pairs"].items())
            lines.append(
                f"| {name} | {pairs} | {plan['words']:,} | {plan['selected_sentences']:,} | "
                f"{plan['teacher_tokens']:,} |"
            )
        write_report(args.output, lines, plans)
        return
    settings = parse_settings(args.set)
    rows = []
    for name, files, keep in variants:
        log(f"{name}: building")
        started = time.perf_counter()
        model = st_static.distill(
            args.teacher,
            args.corpus,
            parallel=files,
            languages=languages,
            work_dir=args.work,
            keep_sources=keep,
            **settings,
        )
        seconds = time.perf_counter() - started
        rows.append({"variant": name, "keep_sources": keep, "seconds": seconds, **scores(model, args.data, languages)})
        log(f"{name}: {seconds:.0f} s, tatoeba dev mean {rows[-1]['tatoeba dev mean']:.2f}")

    columns = [column for column in rows[0] if column not in ("variant", "keep_sources", "seconds")]
    columns = ["tatoeba dev mean", *[c for c in columns if c.startswith("tatoeba-")], "stsb-en-dev"] + [
        c for c in columns if c.startswith("stsb-en-") and c.endswith("-test")
    ]
    reference = rows[0]["tatoeba dev mean"] if rows[0]["variant"] == "base only" else None
    cap = args.max_pairs is not None
    lines = [
        f"# Extra translation pairs by source group ({'-'.join(languages)}, teacher {Path(args.teacher).name})",
        "",
        f"Command: `{command_line('benchmarks.experiments.pair_sources')}`",
        "",
        "Scores x100. Tatoeba: retrieval accuracy on the public files (the dev halves: choose on these); "
        "stsb-en-dev: English STS-B dev; stsb-en-xx-test: cross-lingual STS-B, test only (reported, not chosen on). "
        "Build seconds count only the stages a build did not reuse from the shared work folder."
        + (f" Every file capped at {args.max_pairs} rows (per group in the extra files): a trial run." * cap),
        "",
        "Extra pairs per group: "
        + "; ".join(
            f"{group} " + "/".join(f"{sizes[language]:,}" for language in sizes) for group, sizes in group_sizes.items()
        )
        + f" ({'/'.join(sources)}).",
        "",
        "| variant | " + " | ".join(columns) + " | vs base only | build s |",
        "|---" + "|---:" * (len(columns) + 2) + "|",
    ]
    for row in rows:
        delta = f"{row['tatoeba dev mean'] - reference:+.2f}" if reference is not None else "-"
        cells = [f"{row[column]:.2f}" if column in row else "-" for column in columns]
        lines.append(f"| {row['variant']} | " + " | ".join(cells) + f" | {delta} | {row['seconds']:.0f} |")
    write_report(args.output, lines, {"group_sizes": group_sizes, "rows": rows})
    if args.output is None:
        log(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
