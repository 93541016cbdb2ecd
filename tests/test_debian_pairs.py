"""scripts/debian_pairs.py on small gettext catalogues packed into fake Debian packages."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from .project_scripts import load_script

polib = pytest.importorskip("polib")
script = load_script("debian_pairs")
needs_dpkg = pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is not installed")

KEPT = [
    ("Open the file in a new window", "Ouvrir le fichier dans une nouvelle fenêtre"),
    ("_Save the current document now", "_Enregistrer le document actuel maintenant"),
    ("&Print all the selected pages", "&Imprimer toutes les pages choisies (&P)"),
]
DROPPED = [
    ("Cannot open the file %s now", "Impossible d'ouvrir le fichier %s"),
    ("Copied the files to %1$s today", "Fichiers copiés vers %1$s"),
    ("Hello {name}, welcome back home", "Bonjour {name}, bon retour"),
    ("Delete all the selected files", "Supprimer les {0} fichiers choisis"),
    ("Set the variable $HOME to your folder", "Mettez la variable $HOME à votre dossier"),
    ("<b>Warning:</b> the disk is full", "<b>Attention :</b> le disque est plein"),
    ("The first line of text\nand the second", "La première ligne\net la seconde"),
    ("Use a tab\there to align it", "Utilisez une tabulation\tici"),
    ("Open file", "Ouvrir le fichier"),
    ("3 files were copied without errors", "3 fichiers copiés sans erreur"),
    ("Linux kernel version number here", "Linux kernel version number here"),
    ("Read the manual page of it", ""),
    ("Call the my_own_function helper first", "Appelez d'abord la fonction my_own_function"),
]


def _entry(msgid: str, msgstr: str, fuzzy: bool = False, **fields: object) -> polib.MOEntry:
    entry = polib.MOEntry(msgid=msgid, msgstr=msgstr, **fields)
    entry.flags = ["fuzzy"] if fuzzy else []  # msgfmt leaves fuzzy entries out; MOEntry ignores a flags argument
    return entry


def _catalogue(pairs: list[tuple[str, str]], *entries: polib.MOEntry) -> polib.MOFile:
    catalogue = polib.MOFile()
    for msgid, msgstr in pairs:
        catalogue.append(_entry(msgid, msgstr))
    for entry in entries:
        catalogue.append(entry)
    return catalogue


def _mo(pairs: list[tuple[str, str]]) -> bytes:
    """A compiled catalogue of ``pairs`` (msgfmt sorts its messages by msgid)."""
    catalogue = polib.POFile()
    catalogue.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for msgid, msgstr in pairs:
        catalogue.append(polib.POEntry(msgid=msgid, msgstr=msgstr))
    return catalogue.to_binary()


def _deb(folder: Path, package: str, files: dict[str, bytes], source: str | None = None) -> Path:
    """``folder/PACKAGE_1.0_all.deb`` holding ``files`` (paths inside the package)."""
    root = folder / f"{package}-root"
    (root / "DEBIAN").mkdir(parents=True)
    control = f"Package: {package}\nVersion: 1.0\nArchitecture: all\nMaintainer: Test <test@example.org>\n"
    control += f"Source: {source}\n" if source else ""
    (root / "DEBIAN" / "control").write_text(control + "Description: test package\n", encoding="utf-8")
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    deb = folder / f"{package}_1.0_all.deb"
    subprocess.run(
        ["dpkg-deb", "--root-owner-group", "-Zgzip", "-b", str(root), str(deb)], check=True, capture_output=True
    )
    shutil.rmtree(root)
    return deb


GAME = [("The knight rides into the dark forest", "Le chevalier entre dans la forêt sombre")]
TOOLS = [("Remove the directory if it is empty", "Supprimer le répertoire s'il est vide")]


@pytest.fixture
def debs(tmp_path: Path) -> Path:
    """A game package (catalogues under its own folder, French and German) and a tool package (usr/share/locale,
    locale-langpack), sharing one message."""
    folder = tmp_path / "debs"
    folder.mkdir()
    _deb(
        folder,
        "game-data",
        {
            "usr/share/games/game/locale/fr/LC_MESSAGES/game.mo": _mo([*GAME, *KEPT, *DROPPED]),
            "usr/share/games/game/locale/de/LC_MESSAGES/game.mo": _mo([(GAME[0][0], "Der Ritter reitet in den Wald")]),
            "usr/share/doc/game-data/fr/LC_MESSAGES.txt": b"not a catalogue",
        },
    )
    _deb(
        folder,
        "tools",
        {
            "usr/share/locale/fr/LC_MESSAGES/tools.mo": _mo([*TOOLS, KEPT[0]]),
            "usr/share/locale-langpack/fr/LC_MESSAGES/more.mo": _mo([(KEPT[0][0] + " ", KEPT[0][1])]),
            "usr/share/locale/fr_CA/LC_MESSAGES/tools.mo": _mo([(TOOLS[0][0], "Enlever le répertoire vide, là")]),
        },
    )
    return folder


def test_only_single_line_prose_messages_are_kept_without_mnemonics() -> None:
    catalogue = _catalogue(
        [*KEPT, *DROPPED],
        _entry("Open the file in a new tab", "Ouvrir le fichier dans un onglet", msgctxt="menu"),
        _entry("One file was deleted just now", "", msgid_plural="Many files were deleted", msgstr_plural={0: "Un"}),
        _entry("Close the window right away", "Fermer la fenêtre tout de suite", fuzzy=True),
        _entry("Close the old window right away", "Fermer la vieille fenêtre", obsolete=True),
    )
    assert script.catalogue_pairs(catalogue) == [
        ("Open the file in a new window", "Ouvrir le fichier dans une nouvelle fenêtre"),
        ("Save the current document now", "Enregistrer le document actuel maintenant"),
        ("Print all the selected pages", "Imprimer toutes les pages choisies"),
    ]


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("_Open the file", "Open the file"),
        ("Op_en the file", "Open the file"),
        ("ファイルを開く(_O)", "ファイルを開く"),
        ("&File and &&more", "File and &more"),
        ("Tom & Jerry", "Tom & Jerry"),
        ("A snake_case_name here", None),
        ("100%s done", None),
        ("Fish &amp; chips", None),
        ("Press %1 to go on", None),
        ("C:\\path", None),
    ],
)
def test_messages_lose_their_mnemonics_and_placeholders_drop_them(text: str, cleaned: str | None) -> None:
    assert script.clean_message(text) == cleaned


def test_translations_into_a_non_latin_script_must_be_written_in_it() -> None:
    catalogue = _catalogue(
        [
            ("Save the picture to a file", "画像をファイルに保存します"),
            ("Export the drawing to SVG format", "SVG 形式でエクスポート"),
            ("Save the picture as a PNG", "Save picture as PNG file"),
            ("Print the picture on paper", "Print the picture 画"),  # 1 letter in 16
        ]
    )
    assert script.catalogue_pairs(catalogue, script.script_prefixes("ja")) == [
        ("Save the picture to a file", "画像をファイルに保存します"),
        ("Export the drawing to SVG format", "SVG 形式でエクスポート"),
    ]
    assert script.script_prefixes("ru_RU") == ("CYRILLIC",)
    assert script.script_prefixes("sr@latin") == script.script_prefixes("fr") == ()
    assert script.in_script("Сохранить file", ("CYRILLIC",)) and not script.in_script("1234", ("CYRILLIC",))


def test_short_codes_read_their_country_catalogues_too() -> None:
    assert script.locale_directories("pt") == ("pt", "pt_BR", "pt-BR")
    assert script.locale_directories("zh") == ("zh_CN", "zh-CN")
    assert script.locale_directories("fr") == ("fr",)
    assert script.default_packages("pt")[-2:] == ["libreoffice-l10n-pt", "libreoffice-l10n-pt-br"]
    assert not any(name.startswith("tuxpaint") for name in script.DEFAULT_PACKAGES)


@needs_dpkg
def test_the_command_reads_every_catalogue_of_the_language_once_per_pair(
    debs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from st_static.data_files import read_translation_pairs

    out = tmp_path / "pairs" / "en-fr.tsv"
    script.main(["fr", "--debs", str(debs), "--out", str(out)])
    # game-data's French catalogue in msgid order ("&Print" < "Open" < "The" < "_Save"; German, fr_CA and the .txt
    # are not read), then tools' pairs without the one game-data already gave, twice over (the langpack copy
    # differs by a space only).
    assert read_translation_pairs(out) == [
        ("Print all the selected pages", "Imprimer toutes les pages choisies"),
        ("Open the file in a new window", "Ouvrir le fichier dans une nouvelle fenêtre"),
        ("The knight rides into the dark forest", "Le chevalier entre dans la forêt sombre"),
        ("Save the current document now", "Enregistrer le document actuel maintenant"),
        ("Remove the directory if it is empty", "Supprimer le répertoire s'il est vide"),
    ]
    assert out.read_text(encoding="utf-8").startswith("en\tother\n")
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "game-data: 4 pairs kept of 16 messages (1 .mo)"  # msgfmt left the untranslated one out
    assert printed[1] == "tools: 1 pairs kept of 3 messages (2 .mo)"
    assert printed[2] == f"wrote 5 pairs to {out} from 2 packages (0 skipped; 0 left out by --exclude)"
    script.main(["fr", "--debs", str(debs), "--out", str(out), "--max-pairs", "2"])
    assert [english for english, _ in read_translation_pairs(out)] == [
        "Print all the selected pages",
        "Open the file in a new window",
    ]


def _po(pairs: list[tuple[str, str]], fuzzy: tuple[str, str] | None = None) -> bytes:
    """An uncompiled catalogue of ``pairs`` (and one fuzzy entry), as games that read ``.po`` files ship them."""
    catalogue = polib.POFile()
    catalogue.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for msgid, msgstr in pairs:
        catalogue.append(polib.POEntry(msgid=msgid, msgstr=msgstr))
    if fuzzy is not None:
        catalogue.append(polib.POEntry(msgid=fuzzy[0], msgstr=fuzzy[1], flags=["fuzzy"]))
    return str(catalogue).encode("utf-8")


def test_catalogues_are_compiled_ones_of_the_language_or_its_po_files() -> None:
    directories = script.locale_directories("pt")
    for path in ("usr/share/locale/pt_BR/LC_MESSAGES/a.mo", "usr/share/games/g/levels/world1/pt.po"):
        assert script.is_catalogue(PurePosixPath(path), directories)
    for path in ("usr/share/locale/fr/LC_MESSAGES/a.mo", "usr/share/games/g/po/fr.po", "usr/share/g/pt/a.mo"):
        assert not script.is_catalogue(PurePosixPath(path), directories)


@needs_dpkg
def test_po_files_of_games_are_read_like_compiled_catalogues(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from st_static.data_files import read_translation_pairs

    folder = tmp_path / "debs"
    folder.mkdir()
    story = [("Tux walks through the snowy forest", "Tux marche dans la forêt enneigée")]
    _deb(
        folder,
        "story-data",
        {
            "usr/share/games/story/levels/world1/fr.po": _po(story, fuzzy=("The penguin is hungry today", "x")),
            "usr/share/games/story/locale/fr.po": _po([KEPT[0], DROPPED[0]]),
            "usr/share/games/story/locale/de.po": _po([(story[0][0], "Tux geht durch den Wald")]),
            "usr/share/games/story/locale/broken/fr.po": b"\xff\xfe not text",
        },
    )
    out = tmp_path / "en-fr.tsv"
    script.main(["fr", "--debs", str(folder), "--out", str(out)])
    assert sorted(read_translation_pairs(out)) == sorted([story[0], KEPT[0]])
    printed = capsys.readouterr().out
    assert "story-data: usr/share/games/story/locale/broken/fr.po skipped" in printed
    assert "story-data: 2 pairs kept of 4 messages (0 .mo, 3 .po)" in printed


@needs_dpkg
def test_exclude_drops_the_pairs_that_hold_an_evaluation_text(
    debs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from st_static.data_files import read_translation_pairs

    evaluation = tmp_path / "fra-eng.tsv"
    evaluation.write_text("eng\tother\nThe knight rides into the dark forest!\tUn chevalier.\n", encoding="utf-8")
    out = tmp_path / "en-fr.tsv"
    script.main(["fr", "--debs", str(debs), "--packages", "game-data", "--out", str(out), "--exclude", str(evaluation)])
    assert "The knight rides into the dark forest" not in dict(read_translation_pairs(out))
    assert len(read_translation_pairs(out)) == 3
    assert capsys.readouterr().out.splitlines()[-1].endswith("(0 skipped; 1 left out by --exclude)")


@needs_dpkg
def test_a_missing_package_is_named_and_the_others_go_on(
    debs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from st_static.data_files import read_translation_pairs

    out = tmp_path / "en-fr.tsv"
    script.main(["fr", "--debs", str(debs), "--packages", "no-such-package,tools", "--out", str(out)])
    printed = capsys.readouterr().out
    assert f"no-such-package: skipped (no .deb of it in {debs})" in printed
    assert "(1 skipped: no-such-package;" in printed
    assert len(read_translation_pairs(out)) == 2
    with pytest.raises(SystemExit, match="no package could be read \\(no-such-package\\)"):
        script.main(["fr", "--debs", str(debs), "--packages", "no-such-package", "--out", str(tmp_path / "x.tsv")])
    assert not (tmp_path / "x.tsv").exists()


@needs_dpkg
@pytest.mark.parametrize(
    ("package", "source"), [("tuxpaint-stamps-default", None), ("stamps-extra", "tuxpaint-stamps")]
)
def test_tux_paint_packages_are_refused(debs: Path, tmp_path: Path, package: str, source: str | None) -> None:
    deb = _deb(debs, package, {"usr/share/locale/fr/LC_MESSAGES/stamps.mo": _mo(TOOLS)}, source=source)
    deb.rename(debs / "innocent_1.0_all.deb")  # the control fields name it, not the file name
    out = tmp_path / "en-fr.tsv"
    with pytest.raises(SystemExit, match="Tux Paint packages hold the evaluation captions"):
        script.main(["fr", "--debs", str(debs), "--out", str(out)])
    with pytest.raises(SystemExit, match="refused"):
        script.main(["fr", "--packages", "tools,tuxpaint-data", "--out", str(out)])
    assert not out.exists()


def test_a_cached_package_is_read_without_downloading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tools_1.0_all.deb").write_bytes(b"")
    monkeypatch.setattr(script.subprocess, "run", lambda *args, **kwargs: pytest.fail("downloaded"))
    assert script.downloader(tmp_path)("tools") == tmp_path / "tools_1.0_all.deb"
