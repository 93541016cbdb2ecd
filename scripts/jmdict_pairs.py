"""Write English-Japanese word pairs from JMdict (common entries) as a translation-pair TSV.

The en-ja parallel data of this project are mostly software strings, so every-day words get little training
signal. JMdict's common entries (priority news1/ichi1/spec1/spec2/gai1) give one pair per entry: its first
common written form (kanji, or kana for kana-only words) and the first English gloss of its first sense.
Use the file with ``st-static build --extra-pairs ja=FILE``: the pairs join the contrastive training only.

    pip install jamdict-data   # the JMdict SQLite database (EDRDG licence, CC BY-SA 4.0)
    python scripts/jmdict_pairs.py --out models/en-ja-jmdict.tsv
"""

from __future__ import annotations

import argparse
import re
import sqlite3
from pathlib import Path

from st_static.data_files import write_translation_pairs

COMMON = ("news1", "ichi1", "spec1", "spec2", "gai1")
PARENTHESES = re.compile(r"\s*\([^)]*\)\s*")


def default_database() -> Path:
    try:
        import jamdict_data
    except ImportError as error:
        raise SystemExit("error: pip install jamdict-data (or give --db PATH to a jamdict.db)") from error
    return Path(jamdict_data.JAMDICT_DB_PATH)


def clean_gloss(gloss: str) -> str:
    """``"to eat (something)"`` -> ``"eat"``: no parenthesised notes, no infinitive marker."""
    gloss = PARENTHESES.sub(" ", gloss).strip()
    return gloss[3:] if gloss.startswith("to ") else gloss


def common_pairs(database: Path, all_entries: bool = False) -> list[tuple[str, str]]:
    """``(english, japanese)`` for every common JMdict entry (every entry with ``all_entries``), in dictionary
    order: common entries first."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    marks = ",".join("?" * len(COMMON))
    written = connection.execute(
        f"SELECT k.idseq, k.text FROM Kanji k JOIN KJP p ON p.kid = k.ID WHERE p.text IN ({marks}) ORDER BY k.ID",
        COMMON,
    ).fetchall()
    kana_only = connection.execute(
        f"SELECT n.idseq, n.text FROM Kana n JOIN KNP p ON p.kid = n.ID WHERE p.text IN ({marks}) "
        "AND n.idseq NOT IN (SELECT idseq FROM Kanji) ORDER BY n.ID",
        COMMON,
    ).fetchall()
    forms = [*written, *kana_only]
    if all_entries:
        forms += connection.execute("SELECT idseq, text FROM Kanji ORDER BY ID").fetchall()
        forms += connection.execute(
            "SELECT idseq, text FROM Kana WHERE idseq NOT IN (SELECT idseq FROM Kanji) ORDER BY ID"
        ).fetchall()
    form: dict[int, str] = {}
    for idseq, text in forms:
        form.setdefault(idseq, text)
    gloss: dict[int, str] = {}
    rows = connection.execute(
        "SELECT s.idseq, g.text FROM Sense s JOIN SenseGloss g ON g.sid = s.ID ORDER BY s.idseq, s.ID, g.rowid"
    )
    for idseq, text in rows:
        if idseq in form and idseq not in gloss:
            cleaned = clean_gloss(text)
            if cleaned:
                gloss[idseq] = cleaned
    return [(gloss[idseq], text) for idseq, text in form.items() if idseq in gloss]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=None, help="jamdict.db (default: the jamdict-data package's)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--all-entries", action="store_true", help="every entry, not only the common ones")
    parser.add_argument(
        "--exclude", type=Path, action="append", default=[], help="a pair file (e.g. Tatoeba's) whose texts no pair has"
    )
    args = parser.parse_args()
    pairs = common_pairs(args.db or default_database(), all_entries=args.all_entries)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    written = write_translation_pairs(args.out, pairs, args.exclude)
    print(f"wrote {written:,} pairs to {args.out} ({len(pairs) - written:,} left out by --exclude)")


if __name__ == "__main__":
    main()
