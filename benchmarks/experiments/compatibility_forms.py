"""Compatibility forms: text as Japanese and Chinese keyboards type it, read with NFC or with NFKC.

    python -m benchmarks.experiments.compatibility_forms MODELS/swe-multilingual-e5-small-en-de-ja-zh-extra \
        --data ../shared/data --output benchmarks/results/DATE-compatibility-forms.md

A table's fallback layout reads NFKC (``st_static.model.tokenization.INFERENCE_FORM``): a full-width ``?``, digit or
Latin letter and a half-width katakana read as the character the table was trained on. Tables laid out before read
NFC, which keeps those forms apart: a full-width letter read a fallback row or nothing. Each text set is read in
forms a user's text has:
- *as typed*: the file as it is (Tatoeba's Japanese and Chinese already hold full-width ``?`` and ``!``);
- *full-width*: every ASCII character of the non-English side (of both sides for English STS) full-width, and
  spaces ideographic (``U+3000``), as a keyboard in full-width mode types them;
- *half-width katakana* (Japanese): every katakana half-width, as older systems, receipts and SMS write them.

Scores: Tatoeba dev retrieval against the English side (accuracy x100, mean of both directions) and STS-B dev
(Spearman x100); *cosine to as typed*: the mean cosine of each changed text's vector to its vector as typed;
*texts/s*: ``encode`` over ten copies of the set (best of three runs). The table is read twice, with the same rows:
with NFC (a table laid out before compatibility folding) and as saved.
"""

from __future__ import annotations

import argparse
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.common import command_line, load_average, log, machine, with_tokenizer_state, write_report
from benchmarks.experiments.long_runs import accuracy

TATOEBA = {"de": "deu", "ja": "jpn", "zh": "cmn"}
IDEOGRAPHIC_SPACE = "\u3000"


def full_width(text: str) -> str:
    """``text`` with its ASCII characters full-width and its spaces ideographic."""
    return "".join(
        IDEOGRAPHIC_SPACE if char == " " else chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char for char in text
    )


def _half_width_katakana() -> dict[str, str]:
    """Each katakana (and sound mark) NFKC gives a half-width form of, to that form."""
    table: dict[str, str] = {}
    for code_point in range(0xFF61, 0xFFA0):
        half = chr(code_point)
        table.setdefault(unicodedata.normalize("NFKC", half), half)
    table["\u3099"], table["\u309a"] = "\uff9e", "\uff9f"  # the combining voiced and semi-voiced marks
    return table


_HALF_WIDTH = _half_width_katakana()


def half_width_katakana(text: str) -> str:
    """``text`` with each katakana that has a half-width form written so (``ガ`` -> ``ｶ`` + ``ﾞ``)."""
    out = []
    for char in text:
        parts = unicodedata.normalize("NFD", char)
        is_katakana = "\u30a1" <= char <= "\u30fa" or char == "\u30fc"
        out.append(
            "".join(_HALF_WIDTH[part] for part in parts)
            if is_katakana and all(p in _HALF_WIDTH for p in parts)
            else char
        )
    return "".join(out)


def read_with(model: object, form: str) -> object:
    """The same table with its tokenizer's Unicode normalisation set to ``form`` (``NFC`` or ``NFKC``)."""

    def set_form(state: dict) -> None:
        normalizer = state["normalizer"]
        members = normalizer["normalizers"] if normalizer.get("type") == "Sequence" else [normalizer]
        members[0] = {"type": form}

    return with_tokenizer_state(model, set_form)


def mean_cosine_to_typed(model: object, typed: list[str], changed: list[str]) -> float:
    """The mean cosine of each changed text's vector to its vector as typed (texts the change left alone skipped)."""
    pairs = [(a, b) for a, b in zip(typed, changed, strict=True) if a != b]
    if not pairs:
        return float("nan")
    first = model.encode([a for a, _ in pairs], normalize_embeddings=True)  # type: ignore[attr-defined]
    second = model.encode([b for _, b in pairs], normalize_embeddings=True)  # type: ignore[attr-defined]
    return float(np.mean(np.sum(first * second, axis=1)))


def texts_per_second(model: object, texts: list[str], repeats: int = 3) -> float:
    """Texts per second of ``model.encode`` over ``texts`` (ten copies), the best of ``repeats`` runs."""
    batch = texts * 10
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        model.encode(batch, batch_size=1024)  # type: ignore[attr-defined]
        best = min(best, time.perf_counter() - started)
    return len(batch) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--languages", default="en,de,ja,zh", help="en: STS-B dev; the others: Tatoeba dev")
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()

    from st_static import load_model
    from st_static.data_files import read_translation_pairs
    from st_static.evaluation.encoders import model_encoder
    from st_static.evaluation.sts import evaluate_sts, read_sts_file

    saved = load_model(arguments.model)
    reads = {"NFC (before)": read_with(saved, "NFC"), "NFKC (as saved)": read_with(saved, "NFKC")}
    forms: dict[str, Callable[[str], str]] = {"as typed": lambda text: text, "full-width": full_width}
    lines = [
        "# Compatibility forms read with NFC and with NFKC",
        "",
        f"Command: `{command_line('benchmarks.experiments.compatibility_forms')}`",
        f"Machine: {machine()[0]}; load average {load_average()}.",
        f"Model: `{Path(arguments.model).name}`; the same rows read with either normalisation. Scores x100: Tatoeba "
        "dev accuracy (mean of both directions), STS-B dev Spearman.",
        "",
        "| set | form | texts changed | read | score | cosine to as typed | texts/s |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: |",
    ]
    rows = []
    for language in arguments.languages.split(","):
        if language == "en":
            pairs = read_sts_file(arguments.data / "sts" / "stsb-en-dev.tsv")
            texts = pairs.sentences1 + pairs.sentences2
            set_name = "stsb-en-dev"
        else:
            translations = read_translation_pairs(arguments.data / "tatoeba" / f"{TATOEBA[language]}-eng.tsv")
            english, texts = [pair[0] for pair in translations], [pair[1] for pair in translations]
            set_name = f"tatoeba-{language}-dev"
        chosen = dict(forms)
        if language == "ja":
            chosen["half-width katakana"] = half_width_katakana
        for form_name, form in chosen.items():
            changed = [form(text) for text in texts]
            # "as typed": the texts NFKC reads otherwise than NFC; the other forms: the texts the rewrite changes.
            if form_name == "as typed":
                count = sum(unicodedata.normalize("NFKC", t) != unicodedata.normalize("NFC", t) for t in texts)
            else:
                count = sum(a != b for a, b in zip(texts, changed, strict=True))
            for read_name, model in reads.items():
                if language == "en":
                    half = len(pairs.sentences1)
                    scored = type(pairs)(changed[:half], changed[half:], pairs.scores)
                    score = evaluate_sts(model_encoder(model), scored)["score"]
                else:
                    score = float(accuracy(model, english, changed).mean() * 100)
                cosine = mean_cosine_to_typed(model, texts, changed) if form_name != "as typed" else float("nan")
                speed = texts_per_second(model, changed)
                row = {"set": set_name, "form": form_name, "changed": count, "read": read_name, "score": score}
                row |= {"cosine_to_typed": cosine, "texts_per_second": speed}
                rows.append(row)
                cosine_cell = "" if np.isnan(cosine) else f"{cosine:.3f}"
                lines.append(
                    f"| {set_name} | {form_name} | {count} | {read_name} | {score:.2f} | {cosine_cell} | {speed:,.0f} |"
                )
                log(f"{set_name} {form_name} {read_name}: {score:.2f} {cosine_cell} {speed:,.0f}/s")
    write_report(arguments.output, lines, rows)


if __name__ == "__main__":
    main()
