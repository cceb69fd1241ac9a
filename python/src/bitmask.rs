//! Token bitmasks in the layout serving engines take (XGrammar's and
//! llguidance's): `int32`, `ceil(vocab_size / 32)` words per row, bit
//! `i % 32` of word `i // 32` set when token `i` is allowed.
//!
//! The engine's [`TokenSet`] is 64-bit words with the same bit order, so a
//! row is the set's words split into their low and high halves: one pass,
//! no per-token work. Stop tokens are the one rewrite: the engine marks
//! "the grammar accepts" with its vocabulary's EOS bit, which becomes the
//! bits of every stop token of the tokenizer.

use numpy::{PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

use zapspec_core::{TokenId, TokenSet};

use crate::errors::{kind, raise};

/// Words of one row for a vocabulary of `vocab_size` ids.
pub(crate) fn words_per_row(vocab_size: usize) -> usize {
    vocab_size.div_ceil(32)
}

/// Writes `set` into `row` for a model vocabulary of `vocab_size` ids:
/// ids at or past the set's universe or `vocab_size` are 0, words past
/// the vocabulary are 0, `eos` (the engine's accept marker) becomes the
/// `stop` bits. Returns whether the row bans some id below `vocab_size`
/// (XGrammar's `need_apply`).
pub(crate) fn write_row(
    set: &TokenSet,
    row: &mut [i32],
    vocab_size: usize,
    eos: TokenId,
    stop: &[TokenId],
) -> bool {
    let words = set.words();
    let n = words_per_row(vocab_size).min(row.len());
    let pairs = (n / 2).min(words.len());
    for (pair, &w) in row[..2 * pairs].chunks_exact_mut(2).zip(words) {
        pair[0] = w as u32 as i32;
        pair[1] = (w >> 32) as u32 as i32;
    }
    for (j, x) in row.iter_mut().enumerate().skip(2 * pairs) {
        *x = match words.get(j / 2) {
            Some(&w) if j < n => (w >> (32 * (j % 2))) as u32 as i32,
            _ => 0,
        };
    }
    // ids past the model's vocabulary (a tokenizer larger than the model)
    if !vocab_size.is_multiple_of(32) && n > 0 {
        row[n - 1] &= ((1u64 << (vocab_size % 32)) - 1) as u32 as i32;
    }
    let accepts = set.contains(eos);
    if accepts && !stop.contains(&eos) {
        clear(row, eos as usize);
    }
    if accepts {
        for &s in stop {
            if (s as usize) < vocab_size {
                row[s as usize / 32] |= (1u32 << (s % 32)) as i32;
            }
        }
    }
    !row_is_full(&row[..n], vocab_size)
}

fn clear(row: &mut [i32], t: usize) {
    if let Some(w) = row.get_mut(t / 32) {
        *w &= !((1u32 << (t % 32)) as i32);
    }
}

/// Whether every id below `vocab_size` is allowed.
fn row_is_full(row: &[i32], vocab_size: usize) -> bool {
    let full = vocab_size / 32;
    if row[..full].iter().any(|&w| w != -1) {
        return false;
    }
    let rest = vocab_size % 32;
    rest == 0 || (row[full] as u32) & ((1u32 << rest) - 1) == (1u32 << rest) - 1
}

/// A writable, C-contiguous `int32` array of one or two dimensions behind
/// `obj`: a numpy array, or a CPU `torch.Tensor` (through `.numpy()`,
/// which shares its memory). Anything else is `zapspec.BitmaskError`
/// saying what is wrong.
pub(crate) fn as_int32_array<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyArrayDyn<i32>>> {
    let err = |m: String| raise(py, "BitmaskError", m, kind("bitmask"));
    let arr = if obj.cast::<PyUntypedArray>().is_ok() {
        obj.clone()
    } else if obj.hasattr("numpy")? && obj.hasattr("device")? {
        let device: String = obj.getattr("device")?.getattr("type")?.extract()?;
        if device != "cpu" {
            return Err(err(format!(
                "the bitmask is on {device}: fill it on the CPU (zapspec.allocate_token_bitmask), then move it to the device"
            )));
        }
        obj.call_method0("numpy")?
    } else {
        return Err(err(format!(
            "the bitmask must be a numpy array or a CPU torch tensor, not {}",
            obj.get_type().name()?
        )));
    };
    let Ok(typed) = arr.cast::<PyArrayDyn<i32>>() else {
        // printing a dtype runs numpy's Python code: only on the error path
        let dtype = arr.cast::<PyUntypedArray>()?.dtype().to_string();
        return Err(err(format!(
            "the bitmask must have dtype int32, not {dtype} (zapspec.allocate_token_bitmask)"
        )));
    };
    let nd = typed.ndim();
    if nd != 1 && nd != 2 {
        return Err(err(format!(
            "the bitmask must have 1 or 2 dimensions, not {nd}"
        )));
    }
    if !typed.is_c_contiguous() {
        return Err(err("the bitmask must be C-contiguous".into()));
    }
    // SAFETY: `as_array_ptr` points at the live array object `typed` holds.
    let flags = unsafe { (*typed.as_array_ptr()).fields.flags };
    if flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0 {
        return Err(err("the bitmask is read-only".into()));
    }
    Ok(typed.clone())
}

/// `(rows, columns)` of a 1- or 2-dimensional array (a 1-D array is one
/// row).
pub(crate) fn rows_cols(a: &Bound<'_, PyArrayDyn<i32>>) -> (usize, usize) {
    let s = a.shape();
    if s.len() == 1 {
        (1, s[0])
    } else {
        (s[0], s[1])
    }
}

/// The data of an array [`as_int32_array`] returned, for writing.
///
/// Not through numpy's borrow tracking (`try_readwrite`, a lookup in a
/// table shared by every extension, most of a cached fill's cost from
/// Python): like numpy's own in-place operations, and XGrammar's and
/// llguidance's fills, a write to the same array from another thread
/// during the fill is the caller's race. Rows are written, never read.
///
/// # Safety
///
/// `a` must come from [`as_int32_array`] (live, C-contiguous, writeable,
/// int32), and no other Rust reference to its data may exist while the
/// returned slice lives.
// The array object is shared (a Python reference); its buffer is ours to
// write for the call, as the safety contract says.
#[allow(clippy::mut_from_ref)]
pub(crate) unsafe fn rows_mut<'a>(a: &'a Bound<'_, PyArrayDyn<i32>>) -> &'a mut [i32] {
    let len = a.len();
    // SAFETY: by the contract above the buffer holds `len` writeable
    // int32s, unaliased in Rust; it lives as long as the array object `a`
    // borrows (numpy does not resize an array another object references).
    unsafe { std::slice::from_raw_parts_mut(a.data(), len) }
}

/// Checks that rows of `cols` words hold `vocab_size` ids.
pub(crate) fn check_cols(py: Python<'_>, cols: usize, vocab_size: usize) -> PyResult<()> {
    let need = words_per_row(vocab_size);
    if cols < need {
        return Err(raise(
            py,
            "BitmaskError",
            format!(
                "the bitmask has {cols} words per row, a vocabulary of {vocab_size} ids needs {need} (ceil(vocab_size / 32))"
            ),
            kind("bitmask"),
        ));
    }
    Ok(())
}
