//! The trainers of `tinyllm._core` (`tinyllm.train` is the Python side): BPE merges, a Unigram
//! vocabulary, a WordPiece vocabulary, each with the GIL released. A progress line, when asked
//! for, is drawn by a helper thread that stops however the trainer ends ([`with_progress`]).

use std::sync::atomic::Ordering;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::progress::with_progress;
use crate::train::{bpe, unigram, wordpiece};
use crate::Error;

pub(super) fn stop_name(stop: bpe::StopReason) -> &'static str {
    match stop {
        bpe::StopReason::MaxMerges => "max_merges",
        bpe::StopReason::MinFrequency => "min_frequency",
        bpe::StopReason::NoPairs => "no_pairs",
    }
}

/// Learn BPE merges (see `tinyllm.train.bpe`): the merges and the stop reason, with the
/// GIL released.
#[pyfunction]
pub(super) fn train_bpe_merges(
    py: Python<'_>,
    units: Vec<(Vec<u32>, u64)>,
    base_size: u32,
    max_merges: usize,
    min_frequency: u64,
) -> PyResult<(Vec<(u32, u32)>, &'static str)> {
    let training = py.detach(|| bpe::train(&units, base_size, max_merges, min_frequency))?;
    Ok((training.merges, stop_name(training.stop)))
}

/// Train a Unigram vocabulary (see `tinyllm.train.unigram`) with the GIL released:
/// ([(piece, score)] best first, report dict). With `progress`, "EM round k: n pieces" is
/// refreshed on stderr.
#[pyfunction]
#[pyo3(signature = (words, target, character_coverage=0.9995, max_piece_length=16, seed_size=1_000_000, shrinking_factor=0.75, sub_iterations=2, m_step="ml", progress=false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn train_unigram<'py>(
    py: Python<'py>,
    words: Vec<(String, u64)>,
    target: usize,
    character_coverage: f64,
    max_piece_length: usize,
    seed_size: usize,
    shrinking_factor: f64,
    sub_iterations: usize,
    m_step: &str,
    progress: bool,
) -> PyResult<(Vec<(String, f64)>, Bound<'py, pyo3::types::PyDict>)> {
    let m_step = match m_step {
        "ml" => unigram::MStep::MaximumLikelihood,
        "digamma" => unigram::MStep::Digamma,
        other => {
            return Err(PyValueError::new_err(format!(
                "m_step: expected \"ml\" or \"digamma\", found {other:?}"
            )))
        }
    };
    let options = unigram::Options {
        target,
        character_coverage,
        max_piece_length,
        seed_size,
        shrinking_factor,
        sub_iterations,
        m_step,
    };
    let show = |round: usize, pieces: usize| eprint!("\rEM round {round}: {pieces} pieces");
    let result = py.detach(|| {
        let shown = unigram::train(words, &options, progress.then_some(&show as _));
        if progress {
            eprintln!();
        }
        shown
    });
    let (pieces, report) = result.map_err(|e| match e {
        Error::Invalid(msg) => PyValueError::new_err(msg),
        other => PyValueError::new_err(other.to_string()),
    })?;
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("required_chars", report.required_chars)?;
    dict.set_item("seed_pieces", report.seed_pieces)?;
    dict.set_item("rounds", report.rounds)?;
    dict.set_item("em_iterations", report.em_iterations)?;
    dict.set_item("objective", report.objective)?;
    dict.set_item("pieces", report.pieces)?;
    dict.set_item("stop_reason", report.stop_reason)?;
    let rule = match options.m_step {
        unigram::MStep::MaximumLikelihood => "ml",
        unigram::MStep::Digamma => "digamma",
    };
    dict.set_item("m_step", rule)?;
    Ok((pieces, dict))
}

/// Train a WordPiece vocabulary (see `tinyllm.train.wordpiece`) with the GIL released:
/// (tokens in id order, initial alphabet entries, continuation alphabet entries, merges, reused
/// merges, stop reason). With `progress`, "merges k/n" is refreshed on stderr.
#[pyfunction]
#[pyo3(signature = (words, vocab_size, specials, min_frequency, prefix, limit_alphabet=None, progress=false))]
#[allow(clippy::too_many_arguments, clippy::type_complexity)]
pub(super) fn train_wordpiece(
    py: Python<'_>,
    words: Vec<(String, u64)>,
    vocab_size: usize,
    specials: Vec<String>,
    min_frequency: u64,
    prefix: String,
    limit_alphabet: Option<usize>,
    progress: bool,
) -> PyResult<(Vec<String>, usize, usize, usize, usize, &'static str)> {
    let params = wordpiece::Params {
        vocab_size,
        specials: &specials,
        min_frequency,
        prefix: &prefix,
        limit_alphabet,
    };
    let training = py.detach(|| {
        if !progress {
            return wordpiece::train(&words, &params);
        }
        let shown = wordpiece::Progress::default();
        let result = with_progress(
            Duration::from_millis(200),
            || {
                let most = shown.most.load(Ordering::Relaxed);
                if most > 0 {
                    eprint!("\rmerges {}/{most}", shown.merges.load(Ordering::Relaxed));
                }
            },
            || wordpiece::train_with_progress(&words, &params, Some(&shown)),
        );
        if let Ok(t) = &result {
            let most = shown.most.load(Ordering::Relaxed);
            eprintln!("\rmerges {}/{most}", t.merges);
        }
        result
    })?;
    Ok((
        training.tokens,
        training.initial_alphabet,
        training.continuation_alphabet,
        training.merges,
        training.reused_merges,
        training.stop.name(),
    ))
}
