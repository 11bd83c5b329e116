//! Returning ids to Python fast: lists built from shared ints, and the GIL released around the
//! encoding (one text, or a batch in parallel with the lists built as results arrive).

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::mpsc;

use pyo3::exceptions::PyValueError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use crate::py::text::{text_as_utf8, text_source, Source};
use crate::Error;

/// One Python int per id, shared by every returned list: building a list of ids then costs a
/// reference count per id instead of an int allocation, which was a third of the time of a whole
/// `encode` call on multilingual text.
///
/// An id's int is made the first time a list holds it: a process that encodes a few short texts
/// with a 200,000-token vocabulary does not pay for 200,000 ints (5 ms and 6.4 MB at the first
/// `encode`, when they were all made at once).
pub(crate) struct IdLists {
    max_id: u32,
    /// The table of ints by id (null until made), allocated at the first list. It borrows
    /// them from `made`.
    ints: pyo3::sync::PyOnceLock<Vec<AtomicPtr<ffi::PyObject>>>,
    /// The references to every int in the table, released with it (by PyO3, which defers the
    /// release when the GIL is not held).
    made: std::sync::Mutex<Vec<Py<PyAny>>>,
}

#[inline]
fn prefetch(ptr: *const ffi::PyObject) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(ptr as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// Ids whose ints are asked for at once before a list's slots are filled.
const PREFETCHED: usize = 256;

/// Ids above this get a fresh int per use: a vocabulary with one huge id must not make the table
/// huge.
const SHARED_INTS: u32 = 1 << 22;

impl IdLists {
    pub(crate) fn new(max_id: u32) -> Self {
        IdLists {
            max_id,
            ints: pyo3::sync::PyOnceLock::new(),
            made: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The table of shared ints (made on first use, under the GIL).
    fn ints(&self, py: Python<'_>) -> &[AtomicPtr<ffi::PyObject>] {
        self.ints.get_or_init(py, || {
            (0..=self.max_id.min(SHARED_INTS))
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect()
        })
    }

    /// A new reference to the int of `id`: the shared one, made now if this is its first use.
    #[inline(always)]
    fn int(
        &self,
        py: Python<'_>,
        ints: &[AtomicPtr<ffi::PyObject>],
        id: u32,
    ) -> *mut ffi::PyObject {
        match ints.get(id as usize) {
            Some(slot) => {
                let int = slot.load(Ordering::Acquire);
                if int.is_null() {
                    return self.first_use(py, slot, id);
                }
                // SAFETY: `made` keeps a reference to the int for as long as the table lives.
                unsafe { ffi::Py_INCREF(int) };
                int
            }
            None => id
                .into_pyobject(py)
                .unwrap_or_else(|e| match e {})
                .into_ptr(),
        }
    }

    #[inline(never)]
    fn first_use(
        &self,
        py: Python<'_>,
        slot: &AtomicPtr<ffi::PyObject>,
        id: u32,
    ) -> *mut ffi::PyObject {
        let made = id
            .into_pyobject(py)
            .unwrap_or_else(|e| match e {})
            .into_any()
            .unbind();
        // Another thread may have stored the id's int first (a free-threaded interpreter): then
        // that one is used and this one dropped.
        let int = match slot.compare_exchange(
            std::ptr::null_mut(),
            made.as_ptr(),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                let int = made.as_ptr();
                match self.made.lock() {
                    Ok(mut kept) => kept.push(made),
                    Err(poisoned) => poisoned.into_inner().push(made),
                }
                int
            }
            Err(stored) => stored,
        };
        // SAFETY: `made` keeps a reference to `int` for as long as the table lives.
        unsafe { ffi::Py_INCREF(int) };
        int
    }

    /// Hand `put` the position and a new reference to the shared int of every id, in order.
    fn each_int(
        &self,
        py: Python<'_>,
        ids: &[u32],
        mut put: impl FnMut(usize, *mut ffi::PyObject),
    ) {
        let ints = self.ints(py);
        for (c, chunk) in ids.chunks(PREFETCHED).enumerate() {
            // The ints are spread over a few MB. Asking for a whole chunk's first lets their
            // cache misses overlap, where a fixed distance ahead left most of them in line
            // (+5% on a single-text `encode` of English, unseen or not).
            for &id in chunk {
                if let Some(slot) = ints.get(id as usize) {
                    prefetch(slot.load(Ordering::Relaxed));
                }
            }
            for (j, &id) in chunk.iter().enumerate() {
                put(c * PREFETCHED + j, self.int(py, ints, id));
            }
        }
    }

    fn list<'py>(&self, py: Python<'py>, ids: &[u32]) -> PyResult<Bound<'py, PyList>> {
        // SAFETY: the list is created with `ids.len()` empty slots and each slot is set once,
        // with a new reference, before the list is handed to Python.
        unsafe {
            let list = ffi::PyList_New(ids.len() as ffi::Py_ssize_t);
            if list.is_null() {
                return Err(PyErr::fetch(py));
            }
            let list = Bound::from_owned_ptr(py, list).cast_into_unchecked::<PyList>();
            // The new list's slots, written in place as `PyList_SET_ITEM` does, through a
            // pointer read once: the compiler cannot tell that the reference counts written in
            // between leave the list's fields alone, and read it again for every id.
            #[cfg(not(feature = "abi3"))]
            {
                let slots = (*(list.as_ptr() as *mut ffi::PyListObject)).ob_item;
                self.each_int(py, ids, |k, obj| slots.add(k).write(obj));
            }
            // Cannot fail: the index is in range and the object is a list.
            #[cfg(feature = "abi3")]
            self.each_int(py, ids, |k, obj| {
                ffi::PyList_SetItem(list.as_ptr(), k as ffi::Py_ssize_t, obj);
            });
            Ok(list)
        }
    }

    /// Give `list`, an empty list that no one else has seen (a [`Shells`] list), the shared
    /// ints of `ids`: the slots `PyList_New` would have made, filled as [`IdLists::list`] does.
    #[cfg(not(feature = "abi3"))]
    fn fill(&self, py: Python<'_>, list: &Bound<'_, PyList>, ids: &[u32]) -> PyResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let n = ids.len() as ffi::Py_ssize_t;
        // SAFETY: the list is empty and unshared (no slots: `ob_item` is null), so giving it a
        // block of `n` slots from the allocator lists use, each set once with a new reference,
        // and then its size and capacity, makes it the list `PyList_New(n)` would have been.
        unsafe {
            let raw = list.as_ptr() as *mut ffi::PyListObject;
            debug_assert!((*raw).ob_item.is_null() && (*raw).ob_base.ob_size == 0);
            let slots = ffi::PyMem_Malloc(ids.len() * std::mem::size_of::<*mut ffi::PyObject>())
                as *mut *mut ffi::PyObject;
            if slots.is_null() {
                return Err(pyo3::exceptions::PyMemoryError::new_err(
                    "encode_batch: no memory for a list of ids",
                ));
            }
            self.each_int(py, ids, |k, obj| slots.add(k).write(obj));
            (*raw).ob_item = slots;
            (*raw).allocated = n;
            (*raw).ob_base.ob_size = n;
        }
        Ok(())
    }

    /// `encode` of one text with the GIL released, as a list.
    pub(crate) fn encode_one<'py>(
        &self,
        py: Python<'py>,
        text: &Bound<'_, PyString>,
        encode: impl Fn(&str) -> Result<Vec<u32>, Error> + Send + Sync,
    ) -> PyResult<Bound<'py, PyList>> {
        let text = text_as_utf8(text)?;
        let text: &str = &text;
        let ids = py.detach(|| encode(text))?;
        self.list(py, &ids)
    }

    /// `encode` over many texts in parallel with the GIL released, as a list of lists.
    ///
    /// Building the Python lists needs the GIL and is a fair share of the work (a quarter of a
    /// single-thread `encode` on English), so it overlaps the encoding, and this thread, which
    /// builds them, also encodes: the texts are handed out one at a time from a shared counter
    /// to the threads of [`batch_pool`] and to this one, which turns finished ids into lists
    /// whenever some are waiting and otherwise takes the next text itself. Exactly as many
    /// threads as rayon's pool has cores stay busy (a whole pool beside a list-building thread
    /// had one thread too many, and the lists waited on it at the end).
    pub(crate) fn encode_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<Bound<'_, PyString>>,
        encode: impl Fn(&str) -> Result<Vec<u32>, Error> + Send + Sync,
    ) -> PyResult<Bound<'py, PyList>> {
        let sources = sources(&texts)?;
        let n = sources.len();
        if is_small(&sources) {
            let results = py.detach(|| for_all(&sources, &encode))?;
            let lists = results
                .iter()
                .map(|ids| self.list(py, ids))
                .collect::<PyResult<Vec<_>>>()?;
            return PyList::new(py, lists);
        }
        let mut lists: Vec<Option<Bound<'py, PyList>>> = (0..n).map(|_| None).collect();
        let claims = Claims::new(n);
        let (tx, rx) = mpsc::channel::<(usize, Result<Vec<u32>, Error>)>();
        let encode = &encode;
        let mut first_error: Option<PyErr> = None;
        let mut done = 0;
        let (sources, claims) = (&sources, &claims);
        let work = |tx: &mpsc::Sender<(usize, Result<Vec<u32>, Error>)>| {
            while let Some(k) = claims.take() {
                // A send fails only once the receiver is gone: stop.
                if tx.send((k, encode(&sources[k].utf8()))).is_err() {
                    break;
                }
            }
        };
        let mut main = |mut rx: mpsc::Receiver<(usize, Result<Vec<u32>, Error>)>| {
            // Made while the workers start on the first texts.
            let shells = Shells::new(py, n);
            let mut keep =
                |k: usize, ids: Result<Vec<u32>, Error>, first_error: &mut Option<PyErr>| {
                    if first_error.is_some() {
                        return;
                    }
                    match ids
                        .map_err(PyErr::from)
                        .and_then(|ids| shells.list(self, py, k, &ids))
                    {
                        Ok(list) => lists[k] = Some(list),
                        Err(e) => *first_error = Some(e),
                    }
                };
            while done < n {
                if let Ok((k, ids)) = rx.try_recv() {
                    keep(k, ids, &mut first_error);
                    done += 1;
                    continue;
                }
                if let Some(k) = claims.take() {
                    // After an error the rest are only counted: the call fails anyway.
                    if first_error.is_none() {
                        let ids = py.detach(|| encode(&sources[k].utf8()));
                        keep(k, ids, &mut first_error);
                    }
                    done += 1;
                    continue;
                }
                // Every text is taken; the rest are being encoded elsewhere.
                let (back, got) = py.detach(move || {
                    let got = rx.recv();
                    (rx, got)
                });
                rx = back;
                match got {
                    Ok((k, ids)) => {
                        keep(k, ids, &mut first_error);
                        done += 1;
                    }
                    Err(_) => break, // every worker has stopped
                }
            }
        };
        match batch_pool() {
            // The body runs here, the workers on the pool; the scope's end waits for them (they
            // stop once every text is taken, which is before the last list is made).
            Some(pool) => pool.in_place_scope(|scope| {
                for _ in 0..pool.current_num_threads().min(n) {
                    let (tx, work) = (tx.clone(), &work);
                    scope.spawn(move |_| work(&tx));
                }
                drop(tx);
                main(rx)
            }),
            None => {
                drop(tx);
                main(rx)
            }
        }
        if let Some(e) = first_error {
            return Err(e);
        }
        let lists = lists
            .into_iter()
            .enumerate()
            .map(|(k, list)| {
                list.ok_or_else(|| {
                    PyValueError::new_err(format!("encode_batch: texts[{k}] got no result"))
                })
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, lists)
    }
}

/// The lists of a batch, one per text, made empty before the first is filled and filled as the
/// texts' ids arrive ([`IdLists::fill`]).
///
/// Why empty first: CPython's cycle collector walks its youngest generation after every 700 or
/// so new containers, reading every item of every list in it. Made as results arrived, a batch's
/// lists met that walk in the middle of the call once it made 700 of them, over every id they
/// held: GPT-2 on code, 1,060 texts, a 2.1 ms walk starting at the 772nd list, 3.1 ms into a 5.7
/// ms call, on the thread the workers' results wait for (a build that logged each list's time).
/// Made up front, the lists meet the walk that falls inside the call while still empty, and it
/// costs microseconds (15 µs there); their ids are read by the collector's later walks, as those
/// of any list that is kept. A loop of `encode` calls still meets that walk in full (its lists
/// arrive one per call), so a batch now does less of the collector's work than the loop.
///
/// Under the stable ABI, whose list layout is hidden, the lists are made as results arrive.
struct Shells<'py>(#[cfg_attr(feature = "abi3", allow(dead_code))] Vec<Bound<'py, PyList>>);

impl<'py> Shells<'py> {
    fn new(py: Python<'py>, n: usize) -> Shells<'py> {
        #[cfg(not(feature = "abi3"))]
        return Shells((0..n).map(|_| PyList::empty(py)).collect());
        #[cfg(feature = "abi3")]
        {
            let _ = (py, n);
            Shells(Vec::new())
        }
    }

    /// Text `k`'s list, holding `ids`.
    fn list(
        &self,
        lists: &IdLists,
        py: Python<'py>,
        k: usize,
        ids: &[u32],
    ) -> PyResult<Bound<'py, PyList>> {
        #[cfg(not(feature = "abi3"))]
        {
            let list = self.0[k].clone();
            lists.fill(py, &list, ids)?;
            Ok(list)
        }
        #[cfg(feature = "abi3")]
        {
            let _ = k;
            lists.list(py, ids)
        }
    }
}

/// The threads that encode beside the calling thread in `encode_batch`: a pool of one thread
/// fewer than rayon's (whose size `RAYON_NUM_THREADS` sets), None on one core. A pool of its
/// own, so that the workers are the same threads from call to call and encode with the same warm
/// cache shards: from rayon's pool, the worker was whichever of its two threads took the task,
/// and the other one, woken for nothing, spun beside the two that worked (GPT-2 English: the
/// calling thread encoded 266 to 505 of a batch's 560 texts, in 4.9 to 7.8 ms; twice, on a
/// fresh engine, 558 of 559, and then waited 10-12 ms for the worker's one).
fn batch_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let threads = rayon::current_num_threads().saturating_sub(1);
        (threads > 0)
            .then(|| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .thread_name(|k| format!("tinyllm-batch-{k}"))
                    .build()
                    .ok()
            })
            .flatten()
    })
    .as_ref()
}

/// A batch too small to share out: one text, or a few short ones, encode on the calling thread
/// in less time than handing them to the pool takes (a thread start and a hand-off: 0.05-0.3 ms
/// under load, where an 8 KB text encodes in about 0.1 ms).
const SMALL_BATCH_BYTES: usize = 4096;

fn is_small(texts: &[Source<'_>]) -> bool {
    texts.len() < 2 || texts.iter().map(Source::size).sum::<usize>() < SMALL_BATCH_BYTES
}

/// The texts of a batch, read under the GIL (see [`Source`]: the workers convert wide ones).
pub(crate) fn sources<'a>(texts: &'a [Bound<'_, PyString>]) -> PyResult<Vec<Source<'a>>> {
    texts.iter().map(text_source).collect()
}

/// `f` of every text, in order: on this thread for a small batch, else on this thread and the
/// workers of [`batch_pool`], the same threads as [`IdLists::encode_batch`]'s. Every batch call
/// then encodes with the same warm word-cache shards: on rayon's own pool, `encode_batch_flat`
/// encoded on two more threads whose shards `encode` and `encode_batch` never warm, and a
/// process that used both kinds of call kept four shards, two of them at the smallest size.
/// The texts are handed out one at a time from a shared counter; the results go back in the
/// order of the texts, so the first error is that of the first failing text.
pub(crate) fn for_all<T: Send>(
    texts: &[Source<'_>],
    f: &(impl Fn(&str) -> Result<T, Error> + Sync),
) -> Result<Vec<T>, Error> {
    let pool = match batch_pool() {
        Some(pool) if !is_small(texts) => pool,
        _ => return texts.iter().map(|t| f(&t.utf8())).collect(),
    };
    let claims = Claims::new(texts.len());
    let parts = std::sync::Mutex::new(Vec::new());
    // Take texts until none is left, then hand over what this thread encoded.
    let work = || {
        let mut done = Vec::new();
        while let Some(k) = claims.take() {
            done.push((k, f(&texts[k].utf8())));
        }
        (parts.lock())
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(done);
    };
    pool.in_place_scope(|scope| {
        for _ in 0..pool.current_num_threads().min(texts.len()) {
            scope.spawn(|_| work());
        }
        work();
    });
    // Every index was taken exactly once (a worker's panic ends the scope with it).
    let mut results: Vec<_> = (parts.into_inner())
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_iter()
        .flatten()
        .collect();
    results.sort_unstable_by_key(|&(k, _)| k);
    results.into_iter().map(|(_, result)| result).collect()
}

/// The texts of a batch, handed out one at a time, in order, to whichever thread asks next.
struct Claims {
    next: AtomicUsize,
    n: usize,
}

impl Claims {
    fn new(n: usize) -> Claims {
        Claims {
            next: AtomicUsize::new(0),
            n,
        }
    }

    /// The next index not yet taken, if any.
    fn take(&self) -> Option<usize> {
        let k = self.next.fetch_add(1, Ordering::Relaxed);
        (k < self.n).then_some(k)
    }
}

impl IdLists {
    /// `ids` as a list of the shared ints.
    pub(crate) fn ids_list<'py>(
        &self,
        py: Python<'py>,
        ids: &[u32],
    ) -> PyResult<Bound<'py, PyList>> {
        self.list(py, ids)
    }
}

/// `encode` over many texts in parallel with the GIL released, as one flat buffer: the ids as
/// native-endian u32 bytes and the len(texts) + 1 offsets as native-endian u64 bytes (text k's
/// ids are ids[offsets[k]..offsets[k + 1]]). No Python object per id, so the whole call scales
/// with the cores; Python views the buffers as `array('I')` / `array('Q')` (or numpy) at the cost
/// of one copy.
pub(crate) fn encode_batch_flat<'py>(
    py: Python<'py>,
    texts: Vec<Bound<'_, PyString>>,
    encode: impl Fn(&str) -> Result<Vec<u32>, Error> + Send + Sync,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let sources = sources(&texts)?;
    let results = py.detach(|| for_all(&sources, &encode))?;
    let total: usize = results.iter().map(Vec::len).sum();
    let ids = PyBytes::new_with(py, total * 4, |buf| {
        let mut at = 0;
        for doc in &results {
            for &id in doc {
                buf[at..at + 4].copy_from_slice(&id.to_ne_bytes());
                at += 4;
            }
        }
        Ok(())
    })?;
    let offsets = PyBytes::new_with(py, (results.len() + 1) * 8, |buf| {
        let mut end = 0u64;
        buf[..8].copy_from_slice(&end.to_ne_bytes());
        for (k, doc) in results.iter().enumerate() {
            end += doc.len() as u64;
            buf[8 * (k + 1)..8 * (k + 2)].copy_from_slice(&end.to_ne_bytes());
        }
        Ok(())
    })?;
    Ok((ids, offsets))
}
