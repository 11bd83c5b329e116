"""The playground page (GET /) in a real browser: headless Chromium, driven by selenium, against a
real uvicorn server on a loopback port. The chips show the service's ids, specials obey the
checkbox, compare mode shows a second tokenizer, ids decode through the SSE stream, errors show.

CI installs the browser (.ci/run); elsewhere the browser tests skip when it is missing, naming
what is, and under CI=true a missing browser is a failure, not a skip. The self-containment test
needs no browser.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.peers import CI, ROOT
from tinyllm.serve.app import create_app

TOKENIZERS = ["gpt2", "o200k"]
SCREENSHOT = ROOT / "docs" / "playground.png"
WAIT = 15  # seconds an explicit wait may take before the test fails


# -- the page without a browser -------------------------------------------------------------------

def test_the_page_is_served_self_contained():
    client = TestClient(create_app(TOKENIZERS))
    r = client.get("/")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    assert re.findall(r"(?i)\b(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", page) == []  # no other host, no CDN
    assert re.findall(r"(?i)<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=", page) == []  # all inline
    for anchor in ('id="text"', 'id="tokenizer"', 'id="compare"', 'id="tokenizer2"', 'id="allow-specials"',
                   'class="chips"', 'id="count-tokens"', 'id="ids"', 'id="decode-button"', 'id="decoded"',
                   'id="finish-reason"', 'id="error"'):
        assert anchor in page, anchor


# -- a real server and a real browser -------------------------------------------------------------

def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (the test extra)"
    try:
        import uvicorn  # noqa: F401
    except ImportError:
        return "uvicorn is not installed (the serve extra)"
    for program in ("chromium", "chromedriver"):
        if shutil.which(program) is None:
            return f"{program} is not on PATH (Debian: apt-get install chromium chromium-driver)"
    return None


def _require_browser() -> None:
    missing = _missing()
    if missing:
        if CI:
            pytest.fail(f"CI=true requires the playground test's browser: {missing}", pytrace=False)
        pytest.skip(missing)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _serve(app):
    """`app` on a free loopback port, served by uvicorn in a daemon thread; yields its base URL."""
    import uvicorn

    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(base + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            pytest.fail(f"the server on port {port} did not answer /healthz", pytrace=False)
        time.sleep(0.05)
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def base_url():
    _require_browser()
    with _serve(create_app(TOKENIZERS)) as base:
        yield base


@pytest.fixture(scope="module")
def browser():
    _require_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1280,900", "--hide-scrollbars"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=options)
    try:
        # The window size includes the browser's frame: make the page itself 1280 x 900.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        yield driver
    finally:
        driver.quit()


def _api(base: str, path: str, body: dict, key: str | None = None) -> dict:
    r = httpx.post(base + path, json=body, headers={"X-API-Key": key} if key else {}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def _wait(browser, condition, what: str):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, WAIT).until(lambda d: condition(d), message=what)


def _open(browser, url: str) -> None:
    browser.get(url)
    _wait(browser, lambda d: d.execute_script("return document.body.dataset.ready === '1'"),
          "the page did not load its tokenizers")


def _type(browser, element_id: str, text: str) -> None:
    from selenium.webdriver.common.keys import Keys

    element = browser.find_element("id", element_id)
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    element.send_keys(text)


def _chip_ids(browser, pane: int = 1) -> list[int]:
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(c => Number(c.dataset.id))",
        f"#chips{pane} .chip")


def _wait_chips(browser, expected: list[int], pane: int = 1) -> None:
    try:
        _wait(browser, lambda d: _chip_ids(d, pane) == expected, f"pane {pane} chips")
    except Exception:
        assert _chip_ids(browser, pane) == expected  # the diff, not just a timeout
        raise


def _text_of(browser, element_id: str) -> str:
    return browser.execute_script("return document.getElementById(arguments[0]).textContent", element_id)


def _tokenize(base: str, text: str, tokenizer: str = "gpt2", allowed=None) -> dict:
    body = {"tokenizer": tokenizer, "text": text}
    if allowed is not None:
        body["allowed_special"] = allowed
    return _api(base, "/v1/tokenize", body)


def test_the_tokenizer_select_lists_the_served_tokenizers(browser, base_url):
    _open(browser, base_url + "/")
    options = browser.execute_script(
        "return Array.from(document.querySelectorAll('#tokenizer option')).map(o => o.value)")
    assert options == TOKENIZERS
    assert browser.find_element("id", "tokenizer").get_attribute("value") == "gpt2"


def test_typed_text_shows_the_services_ids_as_chips(browser, base_url):
    browser.get_log("performance")  # drop what came before this page
    _open(browser, base_url + "/")
    text = "Hello world"
    expected = _tokenize(base_url, text)
    _type(browser, "text", text)
    _wait_chips(browser, expected["ids"])
    _wait(browser, lambda d: _text_of(d, "count-tokens") == str(expected["count"]), "the token count")
    assert _text_of(browser, "count-tokens") == str(expected["count"])
    assert _text_of(browser, "count-chars") == "11" and _text_of(browser, "count-bytes") == "11"
    first = browser.find_element("css selector", "#chips1 .chip")
    assert first.get_attribute("title").startswith(f"id {expected['ids'][0]}")
    assert _text_of(browser, "error") == ""

    # Every request went to this server: the page fetches nothing from anywhere else.
    requested = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requested.append(message["params"]["request"]["url"])
    assert requested and all(url.startswith(base_url + "/") for url in requested), requested


def test_allow_specials_turns_control_text_into_one_special_chip(browser, base_url):
    _open(browser, base_url + "/")
    text = "a<|endoftext|>b"
    as_text = _tokenize(base_url, text, allowed=[])["ids"]
    as_special = _tokenize(base_url, text, allowed="all")["ids"]
    assert 50256 not in as_text and as_special.count(50256) == 1  # the premise

    assert not browser.find_element("id", "allow-specials").is_selected()
    _type(browser, "text", text)
    _wait_chips(browser, as_text)
    assert 50256 not in _chip_ids(browser) and len(_chip_ids(browser)) > 3
    assert browser.find_elements("css selector", "#chips1 .chip.special") == []

    browser.find_element("id", "allow-specials").click()
    _wait_chips(browser, as_special)
    assert _chip_ids(browser).count(50256) == 1
    special = browser.find_elements("css selector", "#chips1 .chip.special")
    assert [c.get_attribute("data-id") for c in special] == ["50256"]


def test_compare_shows_a_second_tokenizers_chips(browser, base_url):
    _open(browser, base_url + "/")
    text = "Hello world, naïve café 猫"
    gpt2 = _tokenize(base_url, text, "gpt2")
    o200k = _tokenize(base_url, text, "o200k")
    assert gpt2["ids"] != o200k["ids"]  # the premise: the panes can tell them apart
    assert not browser.find_element("id", "pane2").is_displayed()

    _type(browser, "text", text)
    _wait_chips(browser, gpt2["ids"])
    browser.find_element("id", "compare").click()
    assert browser.find_element("id", "tokenizer2").get_attribute("value") == "o200k"
    _wait_chips(browser, o200k["ids"], pane=2)
    assert browser.find_element("id", "pane2").is_displayed()
    assert _chip_ids(browser, 1) == gpt2["ids"]
    assert _text_of(browser, "count-tokens2") == str(o200k["count"])


def test_ids_decode_through_the_stream(browser, base_url):
    _open(browser, base_url + "/")
    text = "héllo wörld"
    ids = _tokenize(base_url, text)["ids"]
    expected = _api(base_url, "/v1/detokenize", {"tokenizer": "gpt2", "ids": ids})["text"]
    _type(browser, "ids", " ".join(map(str, ids)))
    browser.find_element("id", "decode-button").click()
    _wait(browser, lambda d: _text_of(d, "finish-reason") != "–", "a finish_reason")
    assert _text_of(browser, "finish-reason") == "end"
    assert _text_of(browser, "decoded") == expected == text
    assert _text_of(browser, "error") == ""


def test_a_bad_id_shows_the_services_error(browser, base_url):
    _open(browser, base_url + "/")
    _type(browser, "ids", "15496, 99999999")
    browser.find_element("id", "decode-button").click()
    _wait(browser, lambda d: _text_of(d, "error") != "", "an error line")
    error = browser.find_element("id", "error")
    assert error.is_displayed() and "ids[1]" in error.text, error.text
    assert _text_of(browser, "finish-reason") == "–" and _text_of(browser, "decoded") == ""

    # A line that is not ids is refused by the page itself, naming the entry; then a good one clears it.
    _type(browser, "ids", "15496 abc")
    browser.find_element("id", "decode-button").click()
    _wait(browser, lambda d: "ids[1]" in _text_of(d, "error") and "abc" in _text_of(d, "error"), "the local error")
    _type(browser, "ids", "15496 995")
    browser.find_element("id", "decode-button").click()
    _wait(browser, lambda d: _text_of(d, "finish-reason") == "end", "a finish_reason")
    assert _text_of(browser, "error") == "" and _text_of(browser, "decoded") == "Hello world"


def test_the_page_sends_the_api_key_from_its_url(browser):
    key = "playground-test-key"
    with _serve(create_app(TOKENIZERS, api_key=key)) as base:
        assert httpx.post(base + "/v1/tokenize", json={"text": "x"}).status_code == 401  # the premise
        _open(browser, f"{base}/?key={key}")
        expected = _api(base, "/v1/tokenize", {"text": "Hello world"}, key=key)["ids"]
        _type(browser, "text", "Hello world")
        _wait_chips(browser, expected)
        assert _text_of(browser, "error") == ""


def test_screenshot(browser, base_url):
    """docs/playground.png: text typed, compare on, specials allowed, some ids decoded."""
    _open(browser, base_url + "/")
    text = ("Tokenizers split text into pieces: naïve café, Ελλάδα, привет ★\n"
            "    def f(x):\n        return x ** 2  # code<|endoftext|>")
    gpt2 = _tokenize(base_url, text, "gpt2", allowed="all")["ids"]
    o200k = _tokenize(base_url, text, "o200k", allowed="all")["ids"]
    browser.find_element("id", "allow-specials").click()
    browser.find_element("id", "compare").click()
    _type(browser, "text", text)
    _wait_chips(browser, gpt2)
    _wait_chips(browser, o200k, pane=2)
    _type(browser, "ids", " ".join(map(str, _tokenize(base_url, "Hello, wörld! ✓")["ids"])))
    browser.find_element("id", "decode-button").click()
    _wait(browser, lambda d: _text_of(d, "finish-reason") == "end", "a finish_reason")

    shot = browser.get_screenshot_as_png()
    from PIL import Image

    image = Image.open(io.BytesIO(shot)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert image.size == (1280, 900) and colours is not None and len(colours) > 50  # a picture, not a blank page

    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=SCREENSHOT.parent, prefix=".playground-", suffix=".png")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(shot)
        os.chmod(tmp, 0o644)
        os.replace(tmp, SCREENSHOT)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    assert SCREENSHOT.read_bytes() == shot
