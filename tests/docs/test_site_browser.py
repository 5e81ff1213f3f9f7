"""The built site in a real headless browser (Chromium through Selenium): the home page, a Book page and an API
page render, search finds ``LearnerBuilder``; and no page links to an anchor that does not exist.

The browser tests are skipped, with the reason, where Chromium, its driver or Selenium is missing (Debian:
``apt-get install chromium chromium-driver``; ``pip install selenium``). The anchor check needs no browser.
"""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if key in ("id", "name") and value:
                self.ids.add(value)
            if key == "href" and value and tag == "a":
                self.hrefs.append(value)


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(errors="replace"))
    return parser


def test_no_page_links_to_a_missing_anchor(site: Path) -> None:
    pages = {p: _parse(p) for p in site.rglob("*.html")}
    broken = []
    for page, links in pages.items():
        for href in links.hrefs:
            url = urlparse(href)
            if url.scheme or url.netloc or not url.fragment:
                continue
            target = page if not url.path else (page.parent / unquote(url.path)).resolve()
            if target.is_dir():
                target = target / "index.html"
            if target not in pages:
                continue  # a page link, not an anchor (mkdocs --strict checks those)
            if unquote(url.fragment) not in pages[target].ids:
                broken.append(f"{page.relative_to(site)} -> {href}")
    assert not broken, f"{len(broken)} link(s) to missing anchors: {broken[:20]}"


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The site over HTTP on a free port (search runs in a web worker, which file:// URLs do not allow)."""
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
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (pip install selenium)")
    binary = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        pytest.skip("needs Chromium and its driver (Debian: apt-get install chromium chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _wait(driver: object, condition: object, seconds: float = 30) -> object:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds).until(condition)


@pytest.mark.parametrize(("page", "title", "text"), [
    ("", "The Ember Book", "What Ember is for"),
    ("guide/model/", "Model", "531,178 parameters"),
    ("api/train/", "ember_train", "LearnerBuilder"),
])
def test_pages_render(browser: object, served: str, page: str, title: str, text: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(urljoin(served, page))  # type: ignore[attr-defined]
    _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "article h1"))
    assert title in browser.find_element(By.CSS_SELECTOR, "article h1").text  # type: ignore[attr-defined]
    assert text in browser.find_element(By.CSS_SELECTOR, "article").text  # type: ignore[attr-defined]
    assert browser.find_elements(By.CSS_SELECTOR, "nav.md-nav")  # type: ignore[attr-defined]  # the navigation


def test_search_finds_learner_builder(browser: object, served: str) -> None:
    from selenium.webdriver.common.by import By

    browser.get(served)  # type: ignore[attr-defined]
    browser.find_element(By.CSS_SELECTOR, "label.md-search__icon, label[for=__search]").click()  # type: ignore[attr-defined]
    box = _wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "input.md-search__input"))
    box.send_keys("LearnerBuilder")  # type: ignore[attr-defined]
    results = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item") or None)
    texts = " ".join(r.text for r in results)  # type: ignore[attr-defined]
    assert "LearnerBuilder" in texts, texts[:500]
