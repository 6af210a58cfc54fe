"""The docs site is tested like code: it builds in strict mode (a broken link or anchor fails), every
command has its page with the reference generated from its options, and every exit status, finding
code and option has documentation (the tests name the one that has none).

The build is the documented one (mkdocs.yml's first lines): ``python -m mkdocs build --strict``.
"""

from __future__ import annotations

import ast
import html
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
needs_mkdocs = pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None,
                                  reason="mkdocs is not installed (pip install -e '.[test]')")


def load_hooks():
    spec = importlib.util.spec_from_file_location("seglog_docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hooks = load_hooks()


def build(config: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], cwd=config.parent, capture_output=True, text=True,
                          timeout=300, env={**__import__("os").environ, "NO_MKDOCS_2_WARNING": "1"})


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[test]')")
    out = tmp_path_factory.mktemp("site")
    result = build(REPO / "mkdocs.yml", out)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-4000:]}"
    return out


def page_text(site: Path, page: str) -> str:
    """The text a reader sees on a built page (tags stripped, entities decoded, spaces collapsed)."""
    source = (site / page / "index.html").read_text()
    article = source[source.index("<article"):source.index("</article>")]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", article)).split())


# --- the checks, as functions so that the tests below can show that they fail ------------------

def undocumented_codes(codes, docs) -> list[str]:
    """Finding codes without a meaning, an action or a severity."""
    return [code for code in codes if code not in docs or not docs[code].meaning.strip()
            or not docs[code].action.strip() or not docs[code].severities]


def undocumented_statuses(members, meanings) -> list[str]:
    return [name for name in members if not (meanings.get(name) or "").strip()]


def undocumented_options(params, text: str) -> list[str]:
    """Options and arguments without help text, or whose names or help text (as --help shows
    them) are not in ``text``."""
    missing = []
    for anchor, names, help_record, _ in params:
        if (not help_record.strip() or " ".join(names.split()) not in text
                or " ".join(help_record.split()) not in text):
            missing.append(names)
    return missing


def undocumented_exit_statuses(help_text: str) -> list[str]:
    """Exit statuses a command's HELP lists without saying what they mean."""
    return [status for status, meaning in hooks.exit_status_items(help_text) if not meaning]


# --- the site --------------------------------------------------------------------------------

@needs_mkdocs
def test_the_site_builds_in_strict_mode(site):
    assert (site / "index.html").is_file()
    assert (site / "findings" / "index.html").is_file()


def test_every_command_has_a_page_with_its_reference():
    from seglog_cli.cli import COMMANDS

    for name in COMMANDS:
        page = DOCS / "commands" / f"{name}.md"
        assert page.is_file(), f"docs/commands/{name}.md is missing (and from mkdocs.yml's nav?)"
        assert f"<!-- seglog:reference {name} -->" in page.read_text(), \
            f"docs/commands/{name}.md lacks its generated reference: <!-- seglog:reference {name} -->"
        assert f"commands/{name}.md" in (REPO / "mkdocs.yml").read_text(), f"commands/{name}.md is not in the nav"


@needs_mkdocs
def test_every_option_is_on_its_command_page_as_help_shows_it(site):
    from seglog_cli.cli import COMMANDS

    for name in COMMANDS:
        text = page_text(site, f"commands/{name}")
        params = hooks.documented_params(name)
        assert params
        assert undocumented_options(params, text) == [], f"seglog {name}: options missing from its page"
        source = (site / "commands" / name / "index.html").read_text()
        for anchor, *_ in params:
            assert f'id="{anchor}"' in source, f"seglog {name}: no #{anchor} anchor"
        _, _, help_text = hooks.command_objects(name)
        for status, meaning in hooks.exit_status_items(help_text):
            assert f"{status}: {' '.join(meaning.split())}" in text, f"seglog {name}: exit status {status}"


def test_every_command_documents_its_exit_statuses():
    from seglog_cli.cli import COMMANDS

    for name in COMMANDS:
        _, _, help_text = hooks.command_objects(name)
        items = hooks.exit_status_items(help_text)
        assert items, f"seglog {name}: its HELP lists no exit status"
        assert undocumented_exit_statuses(help_text) == [], f"seglog {name}"


def test_every_exit_status_has_a_meaning():
    from seglog_cli.status import MEANINGS, ExitStatus

    assert undocumented_statuses(ExitStatus.__members__, MEANINGS) == []
    assert set(MEANINGS) <= set(ExitStatus.__members__), "MEANINGS names a status ExitStatus lacks"


@needs_mkdocs
def test_exit_statuses_and_findings_are_on_their_pages(site):
    from seglog_cli.status import MEANINGS, ExitStatus
    from seglog_cli.storage.log.findings import FINDING_DOCS, codes

    statuses = page_text(site, "exit-statuses")
    for name, member in ExitStatus.__members__.items():
        assert f"{int(member)} {name} {MEANINGS[name]}" in statuses, name
    findings = (site / "findings" / "index.html").read_text()
    text = page_text(site, "findings")
    for code in codes():
        assert f'id="{code}"' in findings, f"findings page: no #{code} anchor"
        assert " ".join(FINDING_DOCS[code].meaning.split()) in text, code


def test_every_finding_code_has_a_meaning_and_what_to_do():
    from seglog_cli.storage.log.findings import FINDING_DOCS, codes

    assert len(codes()) > 50
    assert undocumented_codes(codes(), FINDING_DOCS) == []
    assert set(FINDING_DOCS) == set(codes()), "FINDING_DOCS documents a code that Code does not declare"


def severities_used() -> dict[str, set[str]]:
    """code -> the severities the engine gives it where it names both literally
    (``Finding(Code.X, ERROR, ...)``, ``self.add(Code.X, Severity.WARNING, ...)``)."""
    used: dict[str, set[str]] = {}
    for path in (REPO / "seglog_cli" / "storage").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            for first, second in zip(node.args, node.args[1:]):
                if (isinstance(first, ast.Attribute) and isinstance(first.value, ast.Name)
                        and first.value.id == "Code"):
                    name = second.attr if isinstance(second, ast.Attribute) else getattr(second, "id", "")
                    if name in ("INFO", "WARNING", "ERROR"):
                        used.setdefault(first.attr, set()).add(name.lower())
    return used


def test_documented_severities_are_the_engines():
    from seglog_cli.storage.log.findings import codes

    used = severities_used()
    assert len(used) > 40
    for code in codes():
        documented, depends = hooks.finding_severities(code)
        assert used.get(code, set()) <= set(documented), \
            f"{code}: the engine gives it {sorted(used[code])}, FINDING_DOCS says {documented}"
        assert len(documented) == 1 or depends, f"{code}: several severities, and nothing says what decides"


def test_import_rules_are_generated_from_the_docstrings_the_test_enforces():
    rules = hooks.import_rules()
    for package in hooks.storage_rules():
        assert f"`storage.{package}`" in rules
    assert "<!-- seglog:import-rules -->" in (DOCS / "architecture.md").read_text()


# --- the checks can fail --------------------------------------------------------------------------

def test_the_checks_catch_what_is_undocumented():
    from seglog_cli.status import MEANINGS, ExitStatus
    from seglog_cli.storage.log.findings import FINDING_DOCS, CodeDoc, Severity, codes

    fake = dict(FINDING_DOCS, NEW_CODE=CodeDoc((Severity.ERROR,), "", "do something"))
    assert undocumented_codes(codes() + ["NEW_CODE", "ANOTHER_CODE"], fake) == ["NEW_CODE", "ANOTHER_CODE"]
    assert undocumented_statuses(list(ExitStatus.__members__) + ["NEW_STATUS"], MEANINGS) == ["NEW_STATUS"]
    params = hooks.documented_params("undo")
    assert undocumented_options(params, "nothing here") == [names for _, names, _, _ in params]
    text = " ".join(f"{names} {help_record}" for _, names, help_record, _ in params)
    assert undocumented_options(params, text) == []
    assert undocumented_options([("option-x", "--x", "", None)], text + " --x") == ["--x"]
    assert undocumented_exit_statuses("x\nExit status:\n- 0: done\n- 9:\n") == ["9"]
    with pytest.raises(hooks.PlaceholderError, match="no command"):
        hooks.expand_placeholder("reference", "no-such-command")
    with pytest.raises(hooks.PlaceholderError, match="unknown placeholder"):
        hooks.expand_placeholder("exit-codes", None)


@needs_mkdocs
def test_a_broken_anchor_fails_the_strict_build(tmp_path):
    """The same settings on a two-page site: a link to an option anchor that is not there fails."""
    (tmp_path / "docs" / "commands").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[no such option](commands/undo.md#option-no-such)\n")
    (tmp_path / "docs" / "commands" / "undo.md").write_text("# undo\n\n<!-- seglog:reference undo -->\n")
    (tmp_path / "docs" / "exit-statuses.md").write_text("# Exit statuses\n\n<!-- seglog:exit-statuses -->\n")
    config = (REPO / "mkdocs.yml").read_text()
    config = re.sub(r"\nnav:.*", "\n", config, flags=re.S)  # the two pages only
    config = re.sub(r"  - mkdocstrings:.*?(?=\nmarkdown_extensions:)", "", config, flags=re.S)
    config = config.replace("  - docs/hooks.py", f"  - {DOCS / 'hooks.py'}")
    (tmp_path / "mkdocs.yml").write_text(config)
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode != 0 and "option-no-such" in result.stderr, result.stderr[-2000:]
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[--apply](commands/undo.md#option-apply)\n")
    result = build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert result.returncode == 0, result.stderr[-2000:]


@needs_mkdocs
def test_the_runbooks_page_is_the_runbooks_readme(site):
    """Every script and every exit status the runbooks share, from examples/runbooks/README.md."""
    from tests.test_runbooks import SCRIPTS, runbook_statuses

    text = page_text(site, "runbooks")
    for script in SCRIPTS:
        assert f"examples/runbooks/{script}" in text, script
    squeezed = "".join(text.split())  # the page's words, whatever the tags put between them
    for status, meaning in runbook_statuses().items():
        assert "".join(f"{status} {meaning.replace('`', '')}".split()) in squeezed, status
