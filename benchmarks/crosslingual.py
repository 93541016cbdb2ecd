"""Cross-lingual tables after each stage, next to the teacher and a multilingual static peer.

For the stage folders of a cross-lingual ``st-static build`` (its work directory): extraction only, the teacher's
Chinese/Japanese tokens added (when the build did that), sentence-level PCA *without* ABTT (fitted here on the
extraction's PCA sample), PCA with ABTT, and contrastive refinement. Columns: Tatoeba accuracy in both directions
for each language and their mean, cross-lingual STS (Spearman x100), English STS-B dev and test, and the
language-identity silhouette of Tatoeba sentence pairs. Writes a markdown table and, with ``--figure``, the paper's
Figure 1 (English and another language's word vectors on two principal components, before/after ABTT).
``--model LABEL=DIR`` (repeatable) adds the finished tables of other builds as rows, e.g. the same build without the
extra pairs:

    python -m benchmarks.crosslingual WORK_DIR [--teacher DIR --prompt "query: "] [--peer] [--model LABEL=DIR ...]
    python -m benchmarks.crosslingual models/e5-x-extra.work --model "base pairs only=models/e5-x"
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Normalize

from benchmarks.common import (
    ISO_639_3,
    ExtractionStage,
    ReductionSettings,
    StaticWordAverage,
    command_line,
    default_data_dir,
    ensure_venv,
    evaluate_sts,
    evaluate_translation_retrieval,
    fit_reduction,
    is_spaceless_token,
    language_silhouette,
    load_model,
    lookup_encoder,
    model_encoder,
    resolve_teacher,
    task_texts,
    to_numpy,
    write_report,
)

PEER_SCRIPT = """
import json, sys, numpy as np
from static_model import get_embeddings
texts = json.load(open(sys.argv[1], encoding="utf-8"))
np.save(sys.argv[2], np.asarray(get_embeddings(texts), dtype=np.float32))
"""


def find_stage(work_dir: Path, prefix: str) -> Path:
    matches = sorted(work_dir.glob(f"{prefix}-*"), key=lambda path: path.stat().st_mtime)
    matches = [path for path in matches if not path.name.endswith(".partial")]
    if not matches:
        raise SystemExit(f"error: no {prefix}-* stage in {work_dir}")
    return matches[-1]


def tasks_for(data: Path, languages: list[str]) -> dict[str, tuple[str, Path]]:
    tasks: dict[str, tuple[str, Path]] = {
        "stsb-en-dev": ("sts", data / "sts" / "stsb-en-dev.tsv"),
        "stsb-en-test": ("sts", data / "sts" / "stsb-en-test.tsv"),
    }
    for language in languages[1:]:
        tasks[f"tatoeba-{language}"] = ("translation", data / "tatoeba" / f"{ISO_639_3[language]}-eng.tsv")
        tasks[f"sts-en-{language}"] = ("sts", data / "sts" / f"stsb-en-{language}-test.tsv")
    return tasks


def evaluate(encoder: Any, tasks: dict[str, tuple[str, Path]]) -> dict[str, float]:
    scores: dict[str, float] = {}
    for name, (kind, path) in tasks.items():
        if kind == "sts":
            scores[name] = evaluate_sts(encoder, path)["score"]
        else:
            result = evaluate_translation_retrieval(encoder, path)
            scores[f"{name} x->en"] = result["accuracy_2_to_1"]  # already x100
            scores[f"{name} en->x"] = result["accuracy_1_to_2"]
            scores[f"{name} mean"] = (result["accuracy_2_to_1"] + result["accuracy_1_to_2"]) / 2
            scores[f"{name} silhouette"] = result["language_silhouette"]
    return scores


def peer_encoder(cache: Path, texts: list[str]) -> Any:
    python = ensure_venv(cache, "tokenlearn")
    with tempfile.TemporaryDirectory() as scratch:
        texts_file, output = Path(scratch) / "texts.json", Path(scratch) / "embeddings.npy"
        texts_file.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        subprocess.run([str(python), "-c", PEER_SCRIPT, str(texts_file), str(output)], check=True)
        embeddings = np.load(output)
    return lookup_encoder(dict(zip(texts, embeddings, strict=True)))


def figure_one(extraction: ExtractionStage, reduced: StaticWordAverage, other: str, path: Path) -> dict[str, float]:
    """English and ``other`` word vectors on their first two principal components, before and after ABTT."""
    from benchmarks.analysis.plots import plot_language_separation

    raw = load_model(extraction.model_path)[0]
    words = raw.vocabulary
    english = [i for i, word in enumerate(words) if word.isascii() and word.isalpha() and word == word.lower()][:1000]
    if other in ("ja", "zh"):
        foreign = [i for i, word in enumerate(words) if is_spaceless_token(word)][:1000]
    else:
        foreign = [i for i, word in enumerate(words) if not word.isascii() and word.isalpha()][:1000]
    before = to_numpy(raw.word_vectors)
    after = to_numpy(reduced.word_vectors)
    figure = plot_language_separation(
        before[english],
        before[foreign],
        labels=("en", other),
        after=(after[english], after[foreign]),
        removed_components=reduced.metadata.pca.removed_components if reduced.metadata.pca else None,
    )
    figure.savefig(path, dpi=120)
    return {
        "words": float(len(english) + len(foreign)),
        "silhouette_before": language_silhouette(before[english], before[foreign]),
        "silhouette_after": language_silhouette(after[english], after[foreign]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("work_dir", type=Path)
    parser.add_argument("--languages", default=None, help="default: from the model's metadata")
    parser.add_argument("--data", type=Path, default=default_data_dir())
    parser.add_argument("--teacher", default=None, help="teacher folder to add as a row")
    parser.add_argument("--prompt", default="query: ", help="the teacher's prompt")
    parser.add_argument("--english-model", default=None, help="an English-only model to compare STS-B with")
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="a finished table of another build as a row (repeatable), e.g. the build without extra pairs",
    )
    parser.add_argument("--peer", action="store_true", help="add tokenlearn-static-model (own venv)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "st-static")
    parser.add_argument("--figure", type=Path, default=None, help="write Figure 1 (PNG) here")
    parser.add_argument("--output", type=Path, default=None, help="also write the markdown table here")
    args = parser.parse_args()

    extraction = ExtractionStage.open(find_stage(args.work_dir, "extraction"))
    raw_model = load_model(extraction.model_path)
    languages = args.languages.split(",") if args.languages else raw_model[0].metadata.languages
    tasks = tasks_for(args.data, languages)
    rows: dict[str, dict[str, float]] = {}
    if args.teacher:
        teacher = SentenceTransformer(resolve_teacher(args.teacher), device="cpu")
        rows["teacher"] = evaluate(model_encoder(teacher, prompt=args.prompt), tasks)
    if args.peer:
        rows["tokenlearn-static-model"] = evaluate(peer_encoder(args.cache, task_texts(tasks)), tasks)
    if args.english_model:
        rows["English-only model"] = evaluate(model_encoder(load_model(args.english_model)), tasks)
    for item in args.model:
        label, separator, folder = item.rpartition("=")
        if not separator or not label:
            raise SystemExit(f"error: --model takes LABEL=DIR, got {item!r}")
        rows[label] = evaluate(model_encoder(load_model(folder)), tasks)
    rows["extraction"] = evaluate(model_encoder(raw_model), tasks)
    if list(args.work_dir.glob("completion-*")):  # Chinese/Japanese tables: the teacher's tokens added
        extraction = ExtractionStage.open(find_stage(args.work_dir, "completion"))
        raw_model = load_model(extraction.model_path)
        rows["+ token completion"] = evaluate(model_encoder(raw_model), tasks)
    raw = raw_model[0]
    pca_dim = load_model(find_stage(args.work_dir, "pca"))[0].embedding_dim
    no_abtt = fit_reduction(raw, extraction.pca_sentences(), ReductionSettings(dim=pca_dim, removed_components=0))
    no_abtt_module = StaticWordAverage(raw.tokenizer, no_abtt.apply(to_numpy(raw.word_vectors)))
    rows["PCA, no ABTT"] = evaluate(model_encoder(SentenceTransformer(modules=[no_abtt_module, Normalize()])), tasks)
    reduced = load_model(find_stage(args.work_dir, "pca"))
    rows["PCA + ABTT"] = evaluate(model_encoder(reduced), tasks)
    rows["+ contrastive"] = evaluate(model_encoder(load_model(find_stage(args.work_dir, "contrastive"))), tasks)

    columns = list(next(iter(rows.values())))
    lines = [
        f"Cross-lingual table {'-'.join(languages)} ({args.work_dir})",
        "",
        f"Command: `{command_line('benchmarks.crosslingual')}`",
        "",
        "Tatoeba: retrieval accuracy x100 (x->en: the English sentence found for each foreign one; en->x: the "
        "reverse; mean: of both) and the language-identity silhouette of the pairs (lower: languages mixed). "
        "STS: Spearman x100.",
        "",
    ]
    lines.append("| stage | " + " | ".join(columns) + " |")
    lines.append("|---" * (len(columns) + 1) + "|")
    for name, scores in rows.items():
        cells = [f"{scores[column]:.3f}" if "silhouette" in column else f"{scores[column]:.2f}" for column in columns]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if args.figure is not None:
        separation = figure_one(extraction, reduced[0], languages[-1], args.figure)
        lines.append("")
        lines.append(f"Figure 1 ({args.figure}): {json.dumps({k: round(v, 3) for k, v in separation.items()})}")
    write_report(args.output, lines)


if __name__ == "__main__":
    main()
