"""The Ray backend: the encode-dataset shards, exact-dedup keys and MinHash signatures on Ray Data.

`encode_dataset(..., engine="ray")` hands its shard jobs to `ray_shards`. Every shard is written
by the very function the local engine runs, `shard_io.run_shard`, only inside a Ray worker:
a shard is a pure function of its documents, the tokenizer and the settings, so the files and the
manifest are the local engine's bytes by construction (tests/corpus/test_ray.py checks it). The
driver reads and cuts the input, in order, and writes `manifest.json`; the workers write the
shard files, so on a cluster the output directory must be on storage every worker sees.

Memory stays bounded by shards, not by the corpus: the jobs go to Ray in windows (one Ray
Dataset execution each) of at least `2 * workers` shards and `WINDOW_BYTES` bytes of text,
while the driver reads the next window; at most two windows are held.

`ray_dedup_keys` and `ray_minhash_signatures` compute `dedup.exact_dedup_key` and
`minhash.MinHasher(...).signatures` in Ray batches and return them in input order, equal to the
local functions.

Ray is an optional extra (`pip install 'tinyllm[ray]'`); without it every entry point is a
ValueError saying so. `connect(address)` starts a local cluster when `address` is None (the
dashboard off, workers' logs kept off the driver) or joins an existing one ("auto",
"ray://head:10001"); a Ray the caller already initialized is used as it is. A cluster started here
stays up for later calls in the process (`ray.shutdown()` ends it).

What Ray sees (this runs without Ray): windows of shard jobs, each job pickled with its
batch of documents as three lists, and unpacked in the worker into the same batch:

>>> from tinyllm.corpus.batches import as_batch
>>> from tinyllm.corpus.documents import Document
>>> [[index for index, _ in w] for w in windows(enumerate("abcde"), 2)]
[[0, 1], [2, 3], [4]]
>>> [[text for text in w] for w in windows(["ab", "c", "defg", "h", "i"], 1, min_weight=3, weight=len)]
[['ab', 'c'], ['defg'], ['h', 'i']]
>>> index, batch = _unpack_job(_pack_job((3, as_batch([Document("a", "Hello", "web"), Document("b", "x\\ud800")]))))
>>> index, batch.document_ids(), batch.texts(), batch.source_ids()
(3, ['a', 'b'], ['Hello', 'x\ufffd'], ['web', ''])

and, with Ray installed, in prose (it starts a cluster):

    encode_dataset(docs, load("gpt2"), "out/", engine="ray", tokenizer_source="gpt2", workers=2)
    ray_dedup_keys(["a b", "A  b"], "casefold")     # == [exact_dedup_key(t, "casefold") for t ...]
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

RAY_MISSING = "engine 'ray' needs Ray: pip install 'tinyllm[ray]'"

#: Texts per Ray batch for the dedup keys and MinHash signatures: large enough that a task's
#: scheduling (milliseconds) is small against its work, small enough to spread over the workers.
TEXT_BATCH = 2048

#: The least text (UTF-8 bytes) of a window. Each Ray Dataset execution costs about 0.1 s to plan,
#: start and collect, which 2 * workers small shards would not repay; 16 MB take about a
#: second to encode on one core. With the default 16 MB shards, 2 * workers shards already exceed
#: it, so the driver holds at most 4 * workers shards (the local engine: workers + 1). (On 53 MB
#: here, 2 MB shards: windows of 2 * workers shards, 4, 16 and 64 MB of text were within 15%
#: of each other; the driver's reading dominated.)
WINDOW_BYTES = 16 << 20


def _ray():
    """The `ray` module with Ray Data, or the ValueError saying how to install it."""
    try:
        import ray
        import ray.data  # noqa: F401  (ray without the [data] extra lacks pyarrow and pandas)
    except ImportError:
        raise ValueError(RAY_MISSING) from None
    return ray


def connect(address: Optional[str] = None):
    """Ray, initialized: the caller's if already initialized, else a local cluster (`address`
    None or "") or the cluster at `address` ("auto", "HOST:6379", "ray://HOST:10001")."""
    ray = _ray()
    if not ray.is_initialized():
        if address:
            # Only what a Ray Client connection also accepts: it forwards any other non-default
            # argument to the server's ray.init, which refuses the local-cluster ones.
            ray.init(address=address, logging_level=logging.ERROR)
        else:
            # A local cluster of every CPU here (num_cpus unset). Workers' stdout would interleave
            # with the progress bar, and the dashboard is a web server nobody asked for.
            ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    with warnings.catch_warnings():
        # Ray Data's first DataContext sets its own deprecated fields (DeprecationWarnings from
        # inside Ray, about settings tinyllm never touches): create it here, quietly, once.
        warnings.simplefilter("ignore", DeprecationWarning)
        ray.data.DataContext.get_current()
    return ray


def _check_workers(workers) -> int:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers: found {workers!r}; expected an int >= 1")
    return workers


def windows(items: Iterable, size: int, min_weight: int = 0, weight: Optional[Callable] = None) -> Iterator[list]:
    """Consecutive lists of items, each closed once it holds `size` items and their `weight`s add
    up to `min_weight` (the last may hold less)."""
    window: list = []
    total = 0
    for item in items:
        window.append(item)
        total += weight(item) if weight else 0
        if len(window) >= size and total >= min_weight:
            yield window
            window, total = [], 0
    if window:
        yield window


@contextlib.contextmanager
def _quiet_ray_data():
    """Ray Data logs each execution's start, plan and end at INFO; with one execution per window
    that buries the progress bar. Raise its logger to WARNING for the duration only, and to ERROR
    the one that warns that the progress bars we turned off are off."""
    loggers = {"ray.data": logging.WARNING, "ray.data._internal.progress": logging.ERROR}
    saved = {name: logging.getLogger(name).level for name in loggers}
    for name, level in loggers.items():
        logging.getLogger(name).setLevel(level)
    try:
        yield
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


def _execute(ray, payloads: list[bytes], fn: Callable, fn_kwargs: dict, workers: int) -> list[bytes]:
    """Run `fn` on each payload in a Ray Dataset of one row (and one block) per payload, at most
    `workers` tasks at a time, one CPU each; the results in payload order.

    Tasks, not an actor pool: an actor pool is started for every execution (1.5 s a window on this
    machine against 0.1 s for tasks), while task worker processes are reused across executions,
    so a per-process cache (`_WORKER_CACHE`) loads the tokenizer once per worker process."""
    rows = [{"order": k, "payload": p} for k, p in enumerate(payloads)]
    workers = min(workers, len(rows))  # a short last window: Ray Data warns of a pool it cannot fill
    ds = ray.data.from_items(rows, override_num_blocks=len(rows))
    with contextlib.suppress(AttributeError):  # Dataset.context: Ray >= 2.10
        ds.context.enable_progress_bars = False  # this dataset's only: tinyllm shows its own
    compute = {}
    if hasattr(ray.data, "TaskPoolStrategy"):
        try:
            compute = {"compute": ray.data.TaskPoolStrategy(size=workers)}
        except TypeError:  # older Ray: TaskPoolStrategy() without a size
            compute = {}
    if not compute:
        compute = {"concurrency": workers}
    ds = ds.map_batches(_apply, fn_kwargs={"fn": fn, "kwargs": fn_kwargs}, batch_size=1, batch_format="numpy",
                        num_cpus=1, **compute)
    with _quiet_ray_data():
        out = ds.take_all()
    out.sort(key=lambda row: int(row["order"]))
    return [bytes(row["result"]) for row in out]


def _apply(batch: dict, fn: Callable, kwargs: dict) -> dict:
    """The Ray Data batch function: `fn(payload, **kwargs)` on each row (pickled bytes both ways:
    Arrow would turn nested entries into structs and cannot hold a lone surrogate in a string)."""
    import numpy as np

    results = [fn(bytes(p), **kwargs) for p in batch["payload"]]
    return {"order": np.asarray(batch["order"]), "result": np.array(results, dtype=object)}


def _stream(ray, items: Iterable, to_payload: Callable, fn: Callable, fn_kwargs: dict, workers: int,
            weight: Callable) -> Iterator[tuple]:
    """(item, result bytes) for each item, in order, executing a window of items per Ray Dataset
    (at least 2 * workers items and WINDOW_BYTES of `weight`). The next window is read (and
    pickled) on this thread while Ray runs the current one, so the driver's reading overlaps the
    encoding; at most two windows are held."""
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=1) as pool:
        for chunk in windows(items, 2 * workers, WINDOW_BYTES, weight):
            payloads = [to_payload(item) for item in chunk]
            pending.append((chunk, pool.submit(_execute, ray, payloads, fn, fn_kwargs, workers)))
            if len(pending) > 1:
                chunk_done, future = pending.popleft()
                yield from zip(chunk_done, future.result())
        while pending:
            chunk_done, future = pending.popleft()
            yield from zip(chunk_done, future.result())


# Per worker process: tokenizers and MinHashers already built, so a process builds each once
# however many shards or batches it runs.
_WORKER_CACHE: dict = {}


def _worker_tokenizer(source, expected_hash: str):
    """The tokenizer from `source`: a path or preset name loaded here (checked against the
    driver's semantic hash, so a node with a different file fails instead of writing other ids),
    or an ObjectRef to the driver's tokenizer."""
    key = ("tokenizer", source if isinstance(source, str) else source.hex())
    tokenizer = _WORKER_CACHE.get(key)
    if tokenizer is None:
        if isinstance(source, str):
            from tinyllm.tok import load

            tokenizer = load(source)
        else:
            import ray

            tokenizer = ray.get(source)
        if tokenizer.semantic_hash != expected_hash:
            raise ValueError(f"tokenizer_source {source!r} on this Ray worker: found semantic hash "
                             f"{tokenizer.semantic_hash}; expected {expected_hash}, the driver's tokenizer")
        _WORKER_CACHE[key] = tokenizer
    return tokenizer


def _pack_job(job: tuple[int, object]) -> bytes:
    """A shard job as bytes for a worker: its index and its batch's three columns (pickling
    three lists of str takes a quarter of the time of pickling each record, and the driver's time
    is what limits a cluster)."""
    index, batch = job
    columns = (batch.document_ids(), batch.texts(), batch.source_ids())
    return pickle.dumps((index, columns), protocol=pickle.HIGHEST_PROTOCOL)


def _unpack_job(payload: bytes) -> tuple[int, object]:
    from tinyllm.corpus.batches import batch_class

    index, columns = pickle.loads(payload)
    return index, batch_class().from_lists(*columns)


def _shard_task(payload: bytes, out: str, source, expected_hash: str, settings) -> bytes:
    from tinyllm.corpus.shard_io import run_shard

    index, batch = _unpack_job(payload)
    tokenizer = _worker_tokenizer(source, expected_hash)
    return pickle.dumps(run_shard(Path(out), index, batch, tokenizer, settings))


def _tokenizer_source(ray, tokenizer, tokenizer_source):
    """What a worker loads the tokenizer from: `tokenizer_source` (a local path made absolute, as a
    worker's working directory is not the driver's), else the tokenizer through the object store
    when it pickles."""
    if tokenizer_source is not None:
        source = os.fspath(tokenizer_source)
        if os.path.exists(source):
            source = os.path.abspath(source)
        from tinyllm.tok import load

        # Fail here, before any shard runs, when the source is not the tokenizer given.
        found = load(source).semantic_hash
        if found != tokenizer.semantic_hash:
            raise ValueError(f"tokenizer_source: {source!r} has semantic hash {found}; expected "
                             f"{tokenizer.semantic_hash}, the tokenizer being encoded with")
        return source
    try:
        pickle.dumps(tokenizer)
    except Exception as e:  # what a tokenizer's native tables raise varies (TypeError, PicklingError)
        raise ValueError(f"tokenizer_source: found None, and this tokenizer cannot travel to Ray workers "
                         f"({type(e).__name__}: {e}); expected the path or preset name it was loaded from "
                         "(encode_dataset(..., tokenizer_source=...), or -t on the command line)") from None
    return ray.put(tokenizer)


def ray_shards(jobs: Iterable[tuple[int, object]], out, tokenizer, tokenizer_source, settings, workers: int,
               address: Optional[str], on_done=None) -> Iterator[dict]:
    """Run the shard jobs `(index, batch)` on Ray, yielding what `run_shard` returns for each, in
    shard order, and calling `on_done(batch)` as each is yielded (as `local_shards`)."""
    _check_workers(workers)
    ray = connect(address)
    source = _tokenizer_source(ray, tokenizer, tokenizer_source)
    # Workers open the output by this path: absolute, as their working directory differs.
    kwargs = {"out": str(Path(out).resolve()), "source": source, "expected_hash": tokenizer.semantic_hash,
              "settings": settings}
    results = _stream(ray, jobs, _pack_job, _shard_task, kwargs, workers,
                      lambda job: job[1].text_bytes)
    for (index, batch), result in results:
        entry = pickle.loads(result)
        if entry["index"] != index:  # never expected: the order key is ours; guard the manifest anyway
            raise RuntimeError(f"ray_shards: shard {index} came back as {entry['index']}")
        if on_done:
            on_done(batch)
        yield entry


def _cluster_cpus(ray) -> int:
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _text_batches(ray, texts: Iterable[str], fn: Callable, fn_kwargs: dict, workers: Optional[int],
                  batch_size: int) -> list:
    """The per-batch results (unpickled) of `fn` over `texts` cut in batches of `batch_size`."""
    if workers is None:
        workers = _cluster_cpus(ray)
    _check_workers(workers)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: found {batch_size!r}; expected an int >= 1")
    batches = windows(texts, batch_size)
    return [pickle.loads(result) for _, result in
            _stream(ray, batches, lambda b: pickle.dumps(b, protocol=pickle.HIGHEST_PROTOCOL), fn, fn_kwargs,
                    workers, lambda batch: sum(len(t) for t in batch))]


def _dedup_task(payload: bytes, canonicalize) -> bytes:
    from tinyllm.corpus.dedup import exact_dedup_key

    return pickle.dumps([exact_dedup_key(t, canonicalize=canonicalize) for t in pickle.loads(payload)])


def ray_dedup_keys(texts: Iterable[str], canonicalize="none", *, workers: Optional[int] = None,
                   address: Optional[str] = None, batch_size: int = TEXT_BATCH) -> list[bytes]:
    """`[exact_dedup_key(t, canonicalize=canonicalize) for t in texts]`, computed on Ray in
    batches of `batch_size` texts, `workers` tasks at a time (default: the cluster's CPUs)."""
    from tinyllm.corpus.dedup import exact_dedup_key

    exact_dedup_key("", canonicalize=canonicalize)  # a bad canonicalization fails here, not in a worker
    ray = connect(address)
    keys: list[bytes] = []
    for part in _text_batches(ray, texts, _dedup_task, {"canonicalize": canonicalize}, workers, batch_size):
        keys += part
    return keys


def _minhash_task(payload: bytes, num_perm: int, seed: int, k: int) -> bytes:
    key = ("minhash", num_perm, seed, k)
    hasher = _WORKER_CACHE.get(key)
    if hasher is None:
        from tinyllm.corpus.minhash import MinHasher

        hasher = _WORKER_CACHE[key] = MinHasher(num_perm=num_perm, seed=seed, k=k)
    return pickle.dumps(hasher.signatures(pickle.loads(payload)), protocol=pickle.HIGHEST_PROTOCOL)


def ray_minhash_signatures(texts: Iterable[str], num_perm: int, seed: int, k: int, *, workers: Optional[int] = None,
                           address: Optional[str] = None, batch_size: int = TEXT_BATCH):
    """`MinHasher(num_perm=num_perm, seed=seed, k=k).signatures(texts)`, computed on Ray in
    batches, in input order and of the same type (batches' arrays are stacked, lists joined)."""
    from tinyllm.corpus.minhash import MinHasher

    local = MinHasher(num_perm=num_perm, seed=seed, k=k)  # bad settings fail here, not in a worker
    ray = connect(address)
    parts = _text_batches(ray, texts, _minhash_task, {"num_perm": num_perm, "seed": seed, "k": k}, workers,
                          batch_size)
    if not parts:
        return local.signatures([])
    if all(hasattr(p, "shape") for p in parts):
        import numpy as np

        return np.concatenate(parts, axis=0)
    joined: list = []
    for part in parts:
        joined += list(part)
    return joined
