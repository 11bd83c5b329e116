"""The token service (`tinyllm.serve.app`) under concurrent clients, against the same service
around Hugging Face `tokenizers`, same run, same machine.

    python benches/bench_serve.py                          # 32 clients, 10 s per scenario
    python benches/bench_serve.py --seconds 5 --concurrency 8
    python benches/bench_serve.py --long                   # 60 s of tokenize-8k: is RSS bounded?
    python benches/bench_serve.py --client-lib raw         # a client light enough to load the servers
    python benches/bench_serve.py --long --pool 1000 --servers tinyllm --client-lib raw
    python benches/bench_serve.py --pin                    # servers on CPU 0, the clients on CPU 1
    python benches/bench_serve.py --app /tmp/app_x.py      # also a patched copy of app.py ("app_x" rows)

Each server is its own process (`python benches/bench_serve.py --serve tinyllm|hf --port N`:
uvicorn, one worker, loopback, no access log): `tinyllm` is `create_app(["gpt2"])`; `hf` is a
minimal FastAPI app defined here that wraps `tokenizers.Tokenizer.from_file` on the same gpt2
`tokenizer.json` the same way (routes /v1/tokenize and /v1/count, a pydantic body with
`tokenizer` and `text`, the same response fields, sync `def` handlers). The load generator is a
separate process too (`--client-procs`, default 2; `--client inproc` runs it in this process
instead): `--concurrency` clients (default 32) on `httpx.AsyncClient` keep-alive connections,
each sending its next request as soon as the last one is answered, for `--seconds` per scenario
after `--warmup` untimed requests. Scenarios, each over a pool of distinct texts cut from
../shared/data/corpora/*/*.txt (read now; generated text when missing, and it says so), `--pool`
of them (default 64, sent round-robin, so the servers' word caches are warm after the warm-up):

* `tokenize-short`: POST /v1/tokenize, ~50-character texts (whole corpus lines);
* `tokenize-8k`:    POST /v1/tokenize, 8 KB texts (8,192 UTF-8 bytes, cut at a character);
* `count-8k`:       POST /v1/count, the same 8 KB texts.

Every response is checked: status 200 and `ids` (and `count`) equal to the expected ids, computed
once up front with tinyllm and checked equal to Hugging Face's (texts where the two disagree are
left out of the pool, and counted). Columns, per server and scenario:

* `req/s`: answered requests / wall time of the timed run (the requests in flight at the deadline
  are awaited and counted);
* `p50 ms`, `p99 ms`: client-side latency, request sent to response body read;
* `errors`: non-200s, wrong ids or counts, and transport errors;
* `srv cpu`: the server process's CPU time (user + system, all threads) / wall time, in cores
  (2.00 = both cores of a 2-core machine); `us/req`: its CPU microseconds per request, the figure
  least disturbed by the client sharing the CPUs;
* `rss MB`: the server's largest VmRSS sampled every 0.25 s during the timed run; `peak MB`: its
  VmHWM read after the run (reset through /proc/PID/clear_refs before the scenario's warm-up where
  the kernel allows it, so it is this scenario's peak; else the process's peak so far); `thr`: its
  OS threads after the run (a sync handler runs on anyio's pool of up to 40 threads).

Then, per scenario, one summary line: tinyllm / HF for req/s (the issue's target is >= 1.5 on
8 KB texts at 32 clients) and for p99 (target <= 1.0), and the errors (target 0). With `--long`
(or `--seconds` >= 60) it also prints the server RSS at the start of the timed run, every 10 s,
and at the end, so memory growth over a long run shows.

On a small machine the client competes with the server for the CPU: `cli cpu` is the client
processes' CPU (cores, summed) over the run. httpx costs 1-2.5 ms of client CPU per request,
more than tinyllm spends answering one (~0.5-1 ms), so with httpx the run is client-bound
and req/s ratios shrink toward 1 (a summary line says CLIENT-BOUND when the client used more
CPU than the server). One httpx process saturates its event loop near 1 core (measured on 2
cores: tinyllm tokenize-8k ~300 req/s with one client process, ~500-775 with two), hence the
default of 2; `--client-lib raw` (bare HTTP/1.1 on asyncio streams, ~0.05-0.3 ms of client CPU
per request) measures the servers themselves. `--pin` separates them (servers on CPU 0, clients
on the rest), which also keeps a server from using a second core; with httpx it is worse (the
clients get one core: both servers fall to ~160-200 req/s, ratios ~1.1-1.2).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TINYLLM_SHARED_DATA") or ROOT.parent / "shared" / "data")
HF_JSON = ROOT / "python" / "tinyllm" / "tok" / "presets" / "gpt2" / "tokenizer.json"
SCENARIOS = ("tokenize-short", "tokenize-8k", "count-8k")
TICK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------- servers

def tinyllm_app(path: str | None = None):
    """`create_app(["gpt2"])`, from tinyllm or, with `path`, from a (patched) copy of app.py."""
    if path is None:
        from tinyllm.serve.app import create_app
    else:
        import importlib.util

        spec = importlib.util.spec_from_file_location("bench_serve_app_copy", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        create_app = module.create_app
    return create_app(["gpt2"])


class HFBody(BaseModel):
    """The baseline's request body (at module level: FastAPI resolves the annotation by name)."""

    tokenizer: Optional[str] = None
    text: str


def hf_app():
    """The baseline: the same two routes around Hugging Face `tokenizers`, written the usual way."""
    from fastapi import FastAPI
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(HF_JSON))
    semantic_hash = hashlib.sha256(HF_JSON.read_bytes()).hexdigest()
    app = FastAPI(title="HF tokenizers service")

    @app.get("/healthz")
    def healthz() -> dict:
        return {"status": "ok", "tokenizers": 1}

    @app.post("/v1/tokenize")
    def tokenize(req: HFBody) -> dict:
        ids = tok.encode(req.text, add_special_tokens=False).ids
        return {"tokenizer": "gpt2", "semantic_hash": semantic_hash, "ids": ids, "count": len(ids)}

    @app.post("/v1/count")
    def count(req: HFBody) -> dict:
        n = len(tok.encode(req.text, add_special_tokens=False).ids)
        return {"tokenizer": "gpt2", "semantic_hash": semantic_hash, "count": n}

    return app


def serve(kind: str, port: int, app_path: str | None) -> None:
    import uvicorn

    app = hf_app() if kind == "hf" else tinyllm_app(app_path if kind == "app" else None)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One server subprocess; `stop()` always ends it (terminate, then kill)."""

    def __init__(self, kind: str, cpus: set[int] | None):
        """`kind`: "tinyllm", "hf", or the path of a patched copy of app.py (named by its stem)."""
        self.port = free_port()
        argv = [sys.executable, str(Path(__file__).resolve()), "--port", str(self.port)]
        if kind.endswith(".py"):
            self.kind = Path(kind).stem
            argv += ["--serve", "app", "--app", str(Path(kind).resolve())]
        else:
            self.kind = kind
            argv += ["--serve", kind]
        self.proc = subprocess.Popen(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT / "python"), os.environ.get("PYTHONPATH")) if p)})
        if cpus:
            os.sched_setaffinity(self.proc.pid, cpus)
        self.url = f"http://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 120.0) -> None:
        import httpx

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} server exited with {self.proc.returncode}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.kind} server not ready after {timeout:g} s")

    def status(self, field: str) -> float:
        """A VmRSS / VmHWM figure of /proc/PID/status, in MB."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK

    def threads(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/task"))

    def reset_peak(self) -> bool:
        try:
            Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")
            return True
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class RssSampler(threading.Thread):
    def __init__(self, server: Server, every: float = 0.25):
        super().__init__(daemon=True)
        self.server, self.every, self.samples, self.halt = server, every, [], threading.Event()

    def run(self) -> None:
        start = time.perf_counter()
        while not self.halt.is_set():
            self.samples.append((time.perf_counter() - start, self.server.status("VmRSS")))
            self.halt.wait(self.every)

    def stop(self) -> list[tuple[float, float]]:
        self.halt.set()
        self.join()
        self.samples.append((self.samples[-1][0] if self.samples else 0.0, self.server.status("VmRSS")))
        return self.samples


# ----------------------------------------------------------------------------------------- client

class RawConnection:
    """A bare HTTP/1.1 keep-alive connection on asyncio streams: the cheapest client there is in
    Python, to see how much of the CPU httpx itself takes (`--client-lib raw`)."""

    def __init__(self, url: str):
        host, port = url.split("//", 1)[1].split(":")
        self.host, self.port, self.reader, self.writer = host, int(port), None, None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        self.writer.write(f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                          f"Content-Length: {len(body)}\r\n\r\n".encode("ascii") + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        fields = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
        fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
        if "content-length" not in fields:
            raise OSError(f"no Content-Length in the response: {fields}")
        return status, await self.reader.readexactly(int(fields["content-length"]))

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _load(url: str, path: str, bodies: list[bytes], expected: list, concurrency: int, seconds: float,
                requests: int | None, lib: str) -> dict:
    """`concurrency` clients for `seconds` (or until `requests` are sent, for the warm-up)."""
    import httpx

    latencies, errors, sent = [], [], [0]
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60.0) as client:
        start = time.perf_counter()
        deadline = start + seconds

        async def worker(w: int) -> None:
            k = w
            raw = RawConnection(url) if lib == "raw" else None
            while time.perf_counter() < deadline and (requests is None or sent[0] < requests):
                sent[0] += 1
                i = k % len(bodies)
                k += concurrency
                t0 = time.perf_counter()
                try:
                    if raw is None:
                        r = await client.post(path, content=bodies[i], headers=headers)
                        status, body = r.status_code, r.content
                    else:
                        status, body = await raw.post(path, bodies[i])
                    latencies.append(time.perf_counter() - t0)
                except (httpx.HTTPError, OSError, asyncio.IncompleteReadError, ValueError) as e:
                    errors.append(f"{type(e).__name__}: {e}"[:200])
                    if raw is not None:
                        await raw.close()
                        raw = RawConnection(url)
                    continue
                if status != 200:
                    errors.append(f"status {status}: {body[:200]!r}")
                    continue
                got = json.loads(body)
                if path.endswith("/tokenize"):
                    if got.get("ids") != expected[i] or got.get("count") != len(expected[i]):
                        errors.append(f"text {i}: wrong ids or count")
                elif got.get("count") != len(expected[i]):
                    errors.append(f"text {i}: count {got.get('count')}, expected {len(expected[i])}")
            if raw is not None:
                await raw.close()

        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        wall = time.perf_counter() - start
    return {"latencies": latencies, "errors": errors, "wall": wall}


def client_run(url, path, bodies, expected, concurrency, seconds, requests=None, cpus=None, lib="httpx") -> dict:
    if cpus:
        os.sched_setaffinity(0, cpus)
    before = resource.getrusage(resource.RUSAGE_SELF)
    out = asyncio.run(_load(url, path, bodies, expected, concurrency, seconds, requests, lib))
    after = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out


def run_clients(args, pool, url, path, bodies, expected, seconds, requests=None) -> dict:
    """The load, split over `--client-procs` processes (or in this process); merged results."""
    if pool is None:
        return client_run(url, path, bodies, expected, args.concurrency, seconds, requests, None, args.client_lib)
    n = args.client_procs
    shares = [args.concurrency // n + (k < args.concurrency % n) for k in range(n)]
    per = None if requests is None else max(1, requests // n)
    cpus = client_cpus(args)
    jobs = [pool.apply_async(client_run, (url, path, bodies, expected, c, seconds, per, cpus,
                                                  args.client_lib)) for c in shares if c]
    parts = [j.get() for j in jobs]
    return {"latencies": [x for p in parts for x in p["latencies"]], "errors": [e for p in parts for e in p["errors"]],
            "wall": max(p["wall"] for p in parts), "cpu": sum(p["cpu"] for p in parts)}


def client_cpus(args) -> set[int] | None:
    if not args.pin:
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return set(cpus[1:]) or None


# ------------------------------------------------------------------------------------------ texts

def corpus_texts() -> tuple[list[str], str]:
    files = sorted((SHARED / "corpora").glob("*/*.txt"))
    texts = [p.read_text(encoding="utf-8") for p in files]
    if texts:
        return texts, f"{len(files)} files of {SHARED / 'corpora'}"
    rng = random.Random(0)
    words = ["the", "token", "service", "answers", "with", "ids", "of", "each", "text", "it", "is", "given",
             "naïve", "café", "日本語", "😀", "fn", "main()", "{", "}", "return", "x", "=", "42;", "\n"]
    text = " ".join(rng.choice(words) for _ in range(400_000))
    return [text], "GENERATED text (shared corpora missing: set TINYLLM_SHARED_DATA)"


def cut_bytes(text: str, start: int, size: int) -> str:
    """About `size` UTF-8 bytes of `text` from character `start`, cut at a character boundary."""
    data = text[start:start + size].encode("utf-8")[:size]
    return data.decode("utf-8", errors="ignore")


def make_pools(pool_size: int) -> tuple[dict[str, list[str]], str]:
    sources, where = corpus_texts()
    long_texts, short_texts = [], []
    per = max(1, -(-pool_size // len(sources)))
    for text in sources:
        step = max(1, (len(text) - 8192) // per)
        long_texts += [cut_bytes(text, k * step, 8192) for k in range(per) if k * step < len(text)]
        lines = [ln.strip() for ln in text.splitlines() if 40 <= len(ln.strip()) <= 60]
        if not lines:  # a generated text: lines of ~50 characters cut from it
            lines = [text[k:k + 50] for k in range(0, min(len(text), 50 * per * 4), 50)]
        short_texts += lines[:: max(1, len(lines) // per)][:per]
    rng = random.Random(1)
    rng.shuffle(long_texts)
    rng.shuffle(short_texts)
    return {"short": short_texts[:pool_size], "8k": long_texts[:pool_size]}, where


def expected_ids(texts: list[str]) -> tuple[list[str], list[list[int]], int]:
    """(the texts tinyllm and HF agree on, tinyllm's ids of each, how many were left out)."""
    from tokenizers import Tokenizer

    from tinyllm.tok import load

    tok = load("gpt2")
    hf = Tokenizer.from_file(str(HF_JSON))
    ours = tok.encode_batch(texts)
    theirs = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    keep = [k for k in range(len(texts)) if list(ours[k]) == theirs[k]]
    return [texts[k] for k in keep], [list(ours[k]) for k in keep], len(texts) - len(keep)


# ------------------------------------------------------------------------------------------- main

def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, max(0, round(q * len(sorted_values)) - 1))]


def measure(args, pool, server: Server, scenario: str, pools) -> dict:
    path = "/v1/count" if scenario.startswith("count") else "/v1/tokenize"
    texts, expected = pools["short" if scenario.endswith("short") else "8k"]
    bodies = [json.dumps({"tokenizer": "gpt2", "text": t}).encode("utf-8") for t in texts]
    reset = server.reset_peak()
    warm = run_clients(args, pool, server.url, path, bodies, expected, 60.0, args.warmup)
    sampler = RssSampler(server)
    cpu0 = server.cpu_seconds()
    sampler.start()
    out = run_clients(args, pool, server.url, path, bodies, expected, args.seconds)
    samples = sampler.stop()
    cpu = server.cpu_seconds() - cpu0
    lat = sorted(out["latencies"])
    n = len(lat)
    return {"server": server.kind, "scenario": scenario, "requests": n, "rps": n / out["wall"],
            "p50": percentile(lat, 0.50) * 1e3, "p99": percentile(lat, 0.99) * 1e3,
            "errors": len(out["errors"]) + len(warm["errors"]), "error_examples": (warm["errors"] + out["errors"])[:3],
            "srv_cpu": cpu / out["wall"], "us_req": cpu / max(n, 1) * 1e6, "cli_cpu": out["cpu"] / out["wall"],
            "rss": max(s[1] for s in samples), "peak": server.status("VmHWM"), "peak_reset": reset,
            "threads": server.threads(),
            "samples": samples}


def timeline(samples: list[tuple[float, float]], every: float = 10.0) -> str:
    marks, next_mark = [], 0.0
    for t, rss in samples:
        if t >= next_mark:
            marks.append(f"{t:4.0f}s {rss:6.1f}")
            next_mark += every
    marks.append(f"end {samples[-1][1]:6.1f}")
    return " | ".join(marks)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="timed run per server and scenario")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=300, help="untimed requests before each timed run")
    parser.add_argument("--pool", type=int, default=64, help="distinct texts per scenario")
    parser.add_argument("--scenario", action="append", choices=SCENARIOS, help="default: all three")
    parser.add_argument("--servers", default="tinyllm,hf",
                        help="comma-separated: tinyllm, hf, or paths of patched copies of app.py")
    parser.add_argument("--app", action="append", help="a patched copy of app.py, added to --servers (repeatable)")
    parser.add_argument("--long", action="store_true", help="60 s of tokenize-8k, with an RSS timeline")
    parser.add_argument("--client", choices=("proc", "inproc"), default="proc")
    parser.add_argument("--client-procs", type=int, default=min(2, os.cpu_count() or 1),
                        help="client processes sharing --concurrency (default: 2, or 1 on one core)")
    parser.add_argument("--client-lib", choices=("httpx", "raw"), default="httpx",
                        help="httpx.AsyncClient, or bare HTTP/1.1 on asyncio streams (far less client CPU)")
    parser.add_argument("--pin", action="store_true", help="servers on the first CPU, clients on the others")
    parser.add_argument("--serve", choices=("tinyllm", "hf", "app"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.port, (args.app or [None])[0])
        return 0
    if args.long:
        args.seconds = max(args.seconds, 60.0)
        args.scenario = args.scenario or ["tokenize-8k"]
    kinds = [k for k in args.servers.split(",") if k] + (args.app or [])
    for k in kinds:
        if k not in ("tinyllm", "hf") and not (k.endswith(".py") and Path(k).is_file()):
            parser.error(f"--servers: found {k!r}; expected tinyllm, hf or the path of a copy of app.py")
    scenarios = args.scenario or list(SCENARIOS)
    pin = sorted(os.sched_getaffinity(0))
    server_cpus = {pin[0]} if args.pin and len(pin) > 1 else None

    raw, where = make_pools(args.pool)
    pools, dropped = {}, 0
    for key, texts in raw.items():
        kept, ids, gone = expected_ids(texts)
        pools[key] = (kept, ids)
        dropped += gone
    print(f"texts: {where}; {len(pools['short'][0])} short (mean {statistics.mean(map(len, pools['short'][0])):.0f} "
          f"chars), {len(pools['8k'][0])} of 8 KB (mean {statistics.mean(len(t.encode()) for t in pools['8k'][0]):.0f} "
          f"bytes, {statistics.mean(map(len, pools['8k'][1])):.0f} ids); left out, tinyllm != HF: {dropped}")
    where_clients = "in this process" if args.client == "inproc" else f"{args.client_procs} process(es)"
    print(f"{args.concurrency} clients ({args.client_lib}, {where_clients}), {args.seconds:g} s per run "
          f"after {args.warmup} warm-up requests; cores: {os.cpu_count()}"
          + (f"; pinned: servers on CPU {pin[0]}, clients on {pin[1:]}" if server_cpus else ""))

    import multiprocessing

    pool = None
    servers: list[Server] = []
    results = []
    try:
        if args.client == "proc":
            pool = multiprocessing.get_context("spawn").Pool(args.client_procs)
        for k in kinds:
            servers.append(Server(k, server_cpus))
        for s in servers:
            s.wait_ready()
        print(f"{'scenario':<15} {'server':<9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'errors':>6} {'srv cpu':>7} "
              f"{'us/req':>7} {'cli cpu':>7} {'rss MB':>7} {'peak MB':>7} {'thr':>4}")
        for scenario in scenarios:
            for s in servers:
                r = measure(args, pool, s, scenario, pools)
                results.append(r)
                print(f"{scenario:<15} {s.kind:<9} {r['rps']:8.0f} {r['p50']:8.1f} {r['p99']:8.1f} {r['errors']:6d} "
                      f"{r['srv_cpu']:7.2f} {r['us_req']:7.0f} {r['cli_cpu']:7.2f} {r['rss']:7.1f} "
                      f"{r['peak']:7.1f}{'' if r['peak_reset'] else '*'} {r['threads']:4d}", flush=True)
                for e in r["error_examples"]:
                    print(f"    error: {e}")
                if args.seconds >= 60:
                    print(f"    rss MB: {timeline(r['samples'])}")
        print()
        for scenario in scenarios:
            by = {r["server"]: r for r in results if r["scenario"] == scenario}
            if "hf" not in by:
                continue
            for kind in (s.kind for s in servers if s.kind != "hf"):
                a, b = by[kind], by["hf"]
                rps, p99 = a["rps"] / b["rps"], a["p99"] / b["p99"]
                errors = a["errors"] + b["errors"]
                verdict = "meets" if rps >= 1.5 and p99 <= 1.0 and errors == 0 else "misses"
                bound = [k for k, r in ((kind, a), ("hf", b)) if r["cli_cpu"] > r["srv_cpu"]]
                print(f"{scenario}: {kind}/hf req/s {rps:.2f}x, p99 {p99:.2f}x, "
                      f"us/req {a['us_req'] / b['us_req']:.2f}x, errors {a['errors']}+{b['errors']}; "
                      f"{verdict} the target (req/s >= 1.5x, p99 <= 1.0x, 0 errors)"
                      + (f"; CLIENT-BOUND for {'+'.join(bound)} (client CPU > server CPU: req/s understates the "
                         "faster server; --client-lib raw)" if bound else ""))
        if any(not r["peak_reset"] for r in results):
            print("* VmHWM could not be reset: the process's peak so far")
    finally:
        for s in servers:
            s.stop()
        if pool is not None:
            pool.terminate()
            pool.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
