"""The built site in a real browser: Debian's Chromium, headless, driven by chromedriver.

The site is built as the docs say (``mkdocs build --strict``), served on 127.0.0.1, and opened at a
desktop width (where the Material theme shows the navigation on the left and the page's table of
contents on the right) and at a phone's width. On the home page and on every other page:

- the navigation is shown and lists every command;
- the table of contents is shown and is the page's outline: its entries are the page's headings,
  and a command page has sections of its own in it, not only the generated reference;
- no prose runs past its column: no paragraph or list item wider than the article, no page wider
  than the window (code blocks and wide tables scroll inside their own box, and are not prose);
- every picture has loaded.

A screenshot of each page at each width is written to the test's tmp dir (and to
``$SEGLOG_DOCS_SCREENSHOTS`` when set) and checked not to be blank.

Chromium and chromedriver come from the distribution (``apt-get install chromium chromium-driver``;
``.ci/run`` installs them). Without them the test skips with the reason, unless
``SEGLOG_REQUIRE_BROWSER=1`` (set by ``.ci/run``) makes their absence a failure.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import os
import shutil
import threading
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_docs_site import build

CHROMIUM = os.environ.get("SEGLOG_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SEGLOG_CHROMEDRIVER", "/usr/bin/chromedriver")
# the flags that keep Chromium quiet on a machine with no network but loopback
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars"]
DESKTOP, PHONE = (1400, 1000), (390, 844)
# every page of the site, as its URL (mkdocs' directory URLs): the home page, the command pages, the rest
PAGES = ["", *sorted(str(page.relative_to(REPO / "docs").with_suffix("")) + "/"
                     for page in (REPO / "docs").rglob("*.md") if page.name != "index.md")]


def _missing() -> str | None:
    if importlib.util.find_spec("selenium") is None:
        return "selenium is not installed (pip install -e '.[test]')"
    if importlib.util.find_spec("mkdocs") is None:
        return "mkdocs is not installed (pip install -e '.[test]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"no {path} (apt-get install chromium chromium-driver)"
    return None


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    missing = _missing()
    if missing:
        if os.environ.get("SEGLOG_REQUIRE_BROWSER") == "1":
            pytest.fail(f"SEGLOG_REQUIRE_BROWSER=1 but {missing}")
        pytest.skip(missing)
    site = tmp_path_factory.mktemp("site")
    result = build(REPO / "mkdocs.yml", site)
    assert result.returncode == 0, result.stderr[-4000:]
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def browser(served, tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, url: str, size: tuple[int, int]) -> None:
    driver.set_window_size(*size)
    driver.get(url)
    driver.execute_script("return document.fonts ? document.fonts.ready : null")
    # the window's inner size is what the page lays out in: make it the size asked for
    inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
    driver.set_window_size(size[0] * 2 - inner[0], size[1] * 2 - inner[1])


LAYOUT = """
const visible = el => !!el && el.getBoundingClientRect().width > 0 && getComputedStyle(el).visibility !== 'hidden'
    && getComputedStyle(el).display !== 'none';
const text = el => el.textContent.replace(/\\u00b6/g, '').replace(/\\s+/g, ' ').trim();
const article = document.querySelector('article.md-content__inner');
const primary = document.querySelector('.md-sidebar--primary .md-nav--primary');
const toc = document.querySelector('.md-sidebar--secondary .md-nav--secondary');
const right = article.getBoundingClientRect().right;
const wide = [];
for (const el of article.querySelectorAll('p, li, h1, h2, h3, h4, dd, dt, .admonition-title')) {
  if (el.closest('pre, table, .highlight, .md-typeset__scrollwrap')) continue;
  const box = el.getBoundingClientRect();
  // 6 px: less than a character; an inline code span's padding where it wraps overhangs by 3 px
  if (box.width > 0 && (box.right > right + 1 || el.scrollWidth > el.clientWidth + 6))
    wide.push(text(el).slice(0, 80));
}
return {
  innerWidth: window.innerWidth, scrollWidth: document.documentElement.scrollWidth,
  navVisible: visible(primary), nav: primary ? [...primary.querySelectorAll('a')].map(text) : [],
  tocVisible: visible(toc), toc: toc ? [...toc.querySelectorAll('a')].map(text) : [],
  headings: [...article.querySelectorAll('h2, h3')].map(text),
  wide: wide,
  images: [...article.querySelectorAll('img')].map(img => [img.getAttribute('src'), img.complete && img.naturalWidth > 0]),
};
"""


def layout(driver) -> dict:
    return driver.execute_script(LAYOUT)


def screenshot(driver, name: str, tmp_path: Path) -> Path:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    keep = os.environ.get("SEGLOG_DOCS_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(keep) / path.name)
    return path


def not_blank(path: Path) -> bool:
    """More than a handful of colours: text, navigation and pictures, not an empty white page."""
    import matplotlib.image

    pixels = matplotlib.image.imread(path)
    colours = {tuple(row) for row in pixels[::7, ::7, :3].reshape(-1, 3).round(2).tolist()}
    return len(colours) > 20


def test_the_layout_checks_fail_on_overflow(browser, served):
    """The overflow check sees a paragraph wider than its column (an unbreakable word)."""
    open_page(browser, served, DESKTOP)
    browser.execute_script("const p = document.createElement('p'); p.textContent = 'x'.repeat(600);"
                           "p.style.whiteSpace = 'nowrap'; document.querySelector('article').append(p);")
    assert layout(browser)["wide"], "a 600-character unbreakable line was not seen"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p or "home")
def test_a_page_at_desktop_width_has_navigation_outline_and_no_overflow(browser, served, page, tmp_path):
    open_page(browser, served + page, DESKTOP)
    shown = layout(browser)
    shot = screenshot(browser, (page.strip("/").replace("/", "-") or "home") + "-desktop", tmp_path)
    assert not_blank(shot)
    assert shown["navVisible"], "the navigation is not shown"
    missing = [page.stem for page in (REPO / "docs" / "commands").glob("*.md")
               if not any(entry.startswith(f"seglog {page.stem}") for entry in shown["nav"])]
    assert missing == [], f"commands missing from the navigation: {missing}"
    if shown["headings"]:
        assert shown["tocVisible"], "the table of contents is not shown"
        if page == "library/":  # mkdocstrings' headings carry a kind label ("dataclass") the TOC leaves out
            assert all(any(h.startswith(entry) for h in shown["headings"]) for entry in shown["toc"][1:])
        else:
            assert shown["toc"] == shown["headings"], "the table of contents is not the headings"
    if page.startswith("commands/"):
        own = [entry for entry in shown["toc"] if entry not in ("Reference", "Arguments", "Options", "Exit status")]
        assert len(own) >= 3, f"the outline holds only the generated reference: {shown['toc']}"
    assert shown["wide"] == [], "prose wider than its column"
    assert shown["scrollWidth"] <= shown["innerWidth"], "the page scrolls sideways"
    assert all(loaded for _, loaded in shown["images"]), shown["images"]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p or "home")
def test_a_page_at_phone_width_has_no_overflow(browser, served, page, tmp_path):
    open_page(browser, served + page, PHONE)
    shown = layout(browser)
    assert not_blank(screenshot(browser, (page.strip("/").replace("/", "-") or "home") + "-phone", tmp_path))
    assert shown["wide"] == [], "prose wider than its column"
    assert shown["scrollWidth"] <= shown["innerWidth"], "the page scrolls sideways"
    assert all(loaded for _, loaded in shown["images"]), shown["images"]
