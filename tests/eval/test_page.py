"""The HTML report in a real browser: headless Chromium (Debian's chromium + chromium-driver, driven
by selenium) renders the page, every figure loads, and nothing is fetched from the network.

CI installs the browser (.ci/run); elsewhere the test skips when it is missing, naming what is, and
under CI=true a missing browser is a failure, not a skip.
"""

from __future__ import annotations

import io
import json
import shutil

import pytest

from tests.peers import CI
from tinyllm.eval import Record, evaluate
from tinyllm.eval.report_html import render
from tinyllm.tok import ByteTokenizer, load

RECORDS = [Record("p", "g1", "validation", "The cat sleeps on the mat.\n" * 40, slice="prose"),
           Record("c", "g2", "validation", "for i in range(3):\n    print(i)\n" * 20, slice="code"),
           Record("z", "g3", "validation", "猫が寝ている。" * 30, slice="cjk")]


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the test extra)"
    for program in ("chromium", "chromedriver"):
        if shutil.which(program) is None:
            return f"{program} is not on PATH (Debian: apt-get install chromium chromium-driver)"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return "matplotlib is not installed (the plots extra)"
    return None


@pytest.fixture(scope="module")
def browser():
    missing = _missing()
    if missing:
        if CI:
            pytest.fail(f"CI=true requires the page test's browser: {missing}", pytrace=False)
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,2000"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_report_renders_its_figures_and_fetches_nothing(browser, tmp_path):
    reports = {name: evaluate(load(name), RECORDS, baseline=ByteTokenizer()) for name in ("gpt2", "o200k")}
    page = tmp_path / "report.html"
    page.write_text(render(reports, title="page test"), encoding="utf-8")
    browser.get_log("performance")  # drop what came before this page
    browser.get(page.as_uri())

    assert browser.title == "page test"
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight])")
    assert [alt for alt, *_ in images] == ["bytes per token by slice", "record lengths", "amplification by slice",
                                           "exposure"]
    assert all(complete and width > 100 and height > 100 for _, complete, width, height in images), images
    assert "gpt2" in browser.find_element("tag name", "table").text

    # Every request the page made: the file itself, and the figures' data: URLs, nothing else.
    requested = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
    assert requested and requested[0] == page.as_uri()
    assert all(url == page.as_uri() or url.startswith("data:image/png;base64,") for url in requested), \
        [url[:80] for url in requested]
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0

    # The screenshot: a real picture, not a blank page.
    shot = browser.get_screenshot_as_png()
    (tmp_path / "report.png").write_bytes(shot)
    from PIL import Image

    image = Image.open(io.BytesIO(shot)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert image.size[0] >= 1000 and colours is not None and len(colours) > 50
