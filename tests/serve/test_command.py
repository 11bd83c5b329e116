"""`tinyllm serve` as a user runs it: a real uvicorn process on a free loopback port, answering
JSON sent the way `curl -d` sends it, with the API key from the environment; and its argument
errors."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

pytest.importorskip("uvicorn", reason="the serve extra (fastapi, uvicorn) is not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, body: bytes, headers: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    env = {**os.environ, "TINYLLM_API_KEY": "s3cret"}
    proc = subprocess.Popen([sys.executable, "-m", "tinyllm.cli", "serve", "-t", "gpt2", "--port", str(port),
                             "--max-text-chars", "100"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):  # the process loads the tokenizer first; give it up to a minute
            if proc.poll() is not None:
                raise AssertionError(f"tinyllm serve exited: {proc.stdout.read().decode(errors='replace')}")
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=1) as r:
                    assert json.loads(r.read())["status"] == "ok"
                    break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError("tinyllm serve did not answer /healthz")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_serves_json_sent_as_curl_sends_it(server):
    form = {"Content-Type": "application/x-www-form-urlencoded", "X-API-Key": "s3cret"}
    status, body = _post(server + "/v1/tokenize", b'{"tokenizer": "gpt2", "text": "Hello world"}', form)
    assert (status, body["ids"], body["count"]) == (200, [15496, 995], 2)


def test_the_key_from_the_environment_is_required(server):
    status, body = _post(server + "/v1/count", b'{"text": "Hello"}', {})
    assert status == 401 and body["error"]["param"] == "authorization"
    status, body = _post(server + "/v1/count", b'{"text": "Hello"}', {"Authorization": "Bearer s3cret"})
    assert (status, body["count"]) == (200, 1)


def test_a_bad_id_names_its_field_over_the_wire(server):
    status, body = _post(server + "/v1/detokenize", b'{"ids": [15496, 99999999]}', {"X-API-Key": "s3cret"})
    assert status == 400 and body["error"]["param"] == "ids[1]"


def test_the_text_limit_from_the_command_line(server):
    status, body = _post(server + "/v1/count", b'{"text": "' + b"a" * 101 + b'"}', {"X-API-Key": "s3cret"})
    assert status == 413 and body["error"]["param"] == "text"


@pytest.mark.parametrize("args, message", [
    (["--workers", "0"], "--workers: found 0"),
    (["--port", "70000"], "--port: found 70000"),
    (["--max-text-chars", "0"], "--max-text-chars: found"),
])
def test_bad_arguments_are_one_line_errors(args, message):
    run = subprocess.run([sys.executable, "-m", "tinyllm.cli", "serve", *args], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and message in run.stderr
