//! # zapspec-gguf
//!
//! A bounds-checked walk over a GGUF file's header, for loaders (the
//! tokenizer loader of `zapspec-vocab` and the checkpoint loader of
//! `zapspec-backend` both run it first). Depends on no zapspec crate.
//!
//! GGUF readers (candle's `gguf_file` among them) allocate from the counts
//! and lengths the file declares — a string of `2^63` bytes, a tensor with
//! `2^32` dimensions, arrays nested a million deep — before reading the
//! bytes they promise. [`check_gguf_header`] reads the same header with
//! every count and length checked against the bytes that remain in the
//! file and against the documented maxima below, allocating nothing from
//! them, so a loader calls it first and hands only a sane file to the
//! real reader. Tensor *data* sizes are the loader's to check (they need
//! the quantisation block sizes); [`GgufHeaderInfo`] returns the data
//! section's offset and each tensor's element count for that.

use std::io::Read;
use thiserror::Error;

/// Most nesting levels of GGUF arrays (real files use one).
pub const MAX_ARRAY_DEPTH: usize = 4;
/// Most dimensions of one tensor (ggml's `GGML_MAX_DIMS`).
pub const MAX_TENSOR_DIMS: u32 = 4;
/// Most bytes of one string (key, value or tensor name): 16 MiB.
pub const MAX_STRING_BYTES: u64 = 16 << 20;

/// Why a GGUF header was refused.
#[derive(Debug, Error)]
pub enum GgufCheckError {
    /// Reading the file failed (including a file shorter than its header).
    #[error("I/O error at byte {offset}: {source}")]
    Io {
        /// Byte offset of the read that failed.
        offset: u64,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Not a GGUF file, or a version this check does not know.
    #[error("bad magic or version (magic {magic:#010x}, version {version})")]
    BadMagic {
        /// The first four bytes, little-endian.
        magic: u32,
        /// The version field.
        version: u32,
    },
    /// A count or length larger than the rest of the file could hold, or
    /// than its documented maximum.
    #[error("{what} at byte {offset}: {value} is more than {max}")]
    TooLarge {
        /// What was counted (`string length`, `array length`, …).
        what: &'static str,
        /// Byte offset of the field.
        offset: u64,
        /// The declared value.
        value: u64,
        /// The bound it broke (the bytes left, or a maximum).
        max: u64,
    },
    /// A metadata value type that GGUF does not define.
    #[error("unknown value type {ty} at byte {offset}")]
    BadType {
        /// The type code.
        ty: u32,
        /// Byte offset of the field.
        offset: u64,
    },
    /// `general.alignment` is 0 (readers divide the data offset by it).
    #[error("general.alignment at byte {offset} is 0")]
    ZeroAlignment {
        /// Byte offset of the value.
        offset: u64,
    },
}

/// What the walk learnt about the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GgufHeaderInfo {
    /// GGUF version (1, 2 or 3).
    pub version: u32,
    /// Metadata entries.
    pub metadata_entries: u64,
    /// Byte offset where the header (metadata and tensor infos) ends.
    pub header_end: u64,
    /// `(name, element count, ggml type, offset in the data section)` of
    /// each tensor; the element count is `None` when it overflows `u64`.
    pub tensors: Vec<(String, Option<u64>, u32, u64)>,
}

struct Walker<R> {
    r: R,
    pos: u64,
    len: u64,
    wide: bool,
}

impl<R: Read> Walker<R> {
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N], GgufCheckError> {
        let mut b = [0u8; N];
        self.r
            .read_exact(&mut b)
            .map_err(|source| GgufCheckError::Io {
                offset: self.pos,
                source,
            })?;
        self.pos += N as u64;
        Ok(b)
    }
    fn u32(&mut self) -> Result<u32, GgufCheckError> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }
    fn u64(&mut self) -> Result<u64, GgufCheckError> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }
    /// A count or length field (u32 in version 1, u64 after).
    fn count(&mut self) -> Result<u64, GgufCheckError> {
        if self.wide {
            self.u64()
        } else {
            self.u32().map(u64::from)
        }
    }
    fn left(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }
    /// Checks that `n` items of at least `min_size` bytes fit in the rest.
    fn fits(
        &self,
        what: &'static str,
        at: u64,
        n: u64,
        min_size: u64,
        max: u64,
    ) -> Result<(), GgufCheckError> {
        let bound = (self.left() / min_size.max(1)).min(max);
        if n > bound {
            return Err(GgufCheckError::TooLarge {
                what,
                offset: at,
                value: n,
                max: bound,
            });
        }
        Ok(())
    }
    fn skip(&mut self, n: u64) -> Result<(), GgufCheckError> {
        let got =
            std::io::copy(&mut (&mut self.r).take(n), &mut std::io::sink()).map_err(|source| {
                GgufCheckError::Io {
                    offset: self.pos,
                    source,
                }
            })?;
        if got != n {
            return Err(GgufCheckError::Io {
                offset: self.pos + got,
                source: std::io::ErrorKind::UnexpectedEof.into(),
            });
        }
        self.pos += n;
        Ok(())
    }
    fn string(&mut self, keep: bool) -> Result<Option<String>, GgufCheckError> {
        let at = self.pos;
        let n = self.count()?;
        self.fits("string length", at, n, 1, MAX_STRING_BYTES)?;
        if keep {
            let mut v = vec![0u8; n as usize];
            self.r
                .read_exact(&mut v)
                .map_err(|source| GgufCheckError::Io {
                    offset: self.pos,
                    source,
                })?;
            self.pos += n;
            Ok(Some(String::from_utf8_lossy(&v).into_owned()))
        } else {
            self.skip(n)?;
            Ok(None)
        }
    }
    /// Size of a fixed-size value type, `None` for strings and arrays.
    fn fixed(ty: u32) -> Option<Option<u64>> {
        Some(match ty {
            0 | 1 | 7 => Some(1),
            2 | 3 => Some(2),
            4..=6 => Some(4),
            10..=12 => Some(8),
            8 | 9 => None,
            _ => return None,
        })
    }
    fn value(&mut self, ty: u32, at: u64, depth: usize) -> Result<(), GgufCheckError> {
        match Self::fixed(ty) {
            None => Err(GgufCheckError::BadType { ty, offset: at }),
            Some(Some(n)) => self.skip(n),
            Some(None) if ty == 8 => self.string(false).map(|_| ()),
            Some(None) => {
                if depth >= MAX_ARRAY_DEPTH {
                    return Err(GgufCheckError::TooLarge {
                        what: "array nesting",
                        offset: at,
                        value: depth as u64 + 1,
                        max: MAX_ARRAY_DEPTH as u64,
                    });
                }
                let et_at = self.pos;
                let et = self.u32()?;
                let len_at = self.pos;
                let n = self.count()?;
                let min = match Self::fixed(et) {
                    None => {
                        return Err(GgufCheckError::BadType {
                            ty: et,
                            offset: et_at,
                        })
                    }
                    Some(Some(s)) => s,
                    Some(None) if et == 8 => {
                        if self.wide {
                            8
                        } else {
                            4
                        }
                    }
                    Some(None) => 4 + if self.wide { 8 } else { 4 },
                };
                self.fits("array length", len_at, n, min, u64::MAX)?;
                match Self::fixed(et) {
                    Some(Some(s)) => self.skip(n * s),
                    _ => {
                        for _ in 0..n {
                            self.value(et, len_at, depth + 1)?;
                        }
                        Ok(())
                    }
                }
            }
        }
    }
}

/// Walks a GGUF header (see the module docs) from `r`, whose total length
/// is `len` bytes.
pub fn check_gguf_header<R: Read>(r: R, len: u64) -> Result<GgufHeaderInfo, GgufCheckError> {
    let mut w = Walker {
        r,
        pos: 0,
        len,
        wide: true,
    };
    let magic = w.u32()?;
    let version = w.u32()?;
    if magic != 0x4655_4747 || !(1..=3).contains(&version) {
        return Err(GgufCheckError::BadMagic { magic, version });
    }
    w.wide = version >= 2;
    let tc_at = w.pos;
    let tensor_count = w.count()?;
    let kv_at = w.pos;
    let kv_count = w.count()?;
    // a tensor info is at least a name length, a dimension count, a type
    // and an offset; a metadata entry a key length and a type
    let word = if w.wide { 8 } else { 4 };
    w.fits("metadata entries", kv_at, kv_count, word + 4, u64::MAX)?;
    for _ in 0..kv_count {
        let key = w.string(true)?.unwrap_or_default();
        let at = w.pos;
        let ty = w.u32()?;
        // The data section is aligned to `general.alignment` (an unsigned
        // or non-negative signed integer of up to 32 bits; readers use the
        // default for other types): 0 would divide by zero.
        // Readers drop trailing NULs from strings (candle does), so a key
        // padded with them is the same key.
        let key = key.trim_end_matches('\0');
        if key == "general.alignment" && Walker::<R>::fixed(ty).is_some_and(|n| n.is_some()) {
            let v_at = w.pos;
            let v = match ty {
                0 | 1 => u64::from(w.bytes::<1>()?[0]),
                2 | 3 => u64::from(u16::from_le_bytes(w.bytes()?)),
                4 | 5 => u64::from(w.u32()?),
                _ => {
                    w.value(ty, at, 0)?;
                    continue;
                }
            };
            if v == 0 {
                return Err(GgufCheckError::ZeroAlignment { offset: v_at });
            }
            continue;
        }
        w.value(ty, at, 0)?;
    }
    w.fits(
        "tensor count",
        tc_at,
        tensor_count,
        word + 4 + 4 + 8,
        u64::MAX,
    )?;
    let mut tensors = Vec::with_capacity(tensor_count as usize);
    for _ in 0..tensor_count {
        let name = w.string(true)?.unwrap_or_default();
        let at = w.pos;
        let nd = w.u32()?;
        if nd > MAX_TENSOR_DIMS {
            return Err(GgufCheckError::TooLarge {
                what: "tensor dimensions",
                offset: at,
                value: nd as u64,
                max: MAX_TENSOR_DIMS as u64,
            });
        }
        // The product of the non-zero dimensions bounds every partial
        // product in every order: a reader that multiplies the dimensions
        // in another order (candle reverses them) cannot overflow on a
        // shape this check passed because a zero came first here.
        let mut bound = Some(1u64);
        let mut has_zero = false;
        for _ in 0..nd {
            let d = w.count()?;
            has_zero |= d == 0;
            bound = bound.and_then(|e| e.checked_mul(d.max(1)));
        }
        let elems = bound.map(|b| if has_zero { 0 } else { b });
        let ty = w.u32()?;
        let off = w.u64()?;
        tensors.push((name, elems, ty, off));
    }
    Ok(GgufHeaderInfo {
        version,
        metadata_entries: kv_count,
        header_end: w.pos,
        tensors,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(tensors: u64, kvs: u64) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(b"GGUF");
        v.extend_from_slice(&3u32.to_le_bytes());
        v.extend_from_slice(&tensors.to_le_bytes());
        v.extend_from_slice(&kvs.to_le_bytes());
        v
    }

    fn check(v: &[u8]) -> Result<GgufHeaderInfo, GgufCheckError> {
        check_gguf_header(v, v.len() as u64)
    }

    #[test]
    fn empty_header_and_one_entry() {
        let v = header(0, 0);
        assert_eq!(check(&v).unwrap().header_end, 24);
        let mut v = header(0, 1);
        v.extend_from_slice(&3u64.to_le_bytes());
        v.extend_from_slice(b"key");
        v.extend_from_slice(&4u32.to_le_bytes()); // u32
        v.extend_from_slice(&7u32.to_le_bytes());
        assert_eq!(check(&v).unwrap().metadata_entries, 1);
    }

    #[test]
    fn hostile_lengths_are_refused_without_allocating() {
        let mut v = header(0, 1);
        v.extend_from_slice(&u64::MAX.to_le_bytes()); // key length
        assert!(matches!(check(&v), Err(GgufCheckError::TooLarge { .. })));
        let v = header(u64::MAX, 0);
        assert!(matches!(check(&v), Err(GgufCheckError::TooLarge { .. })));
        let mut v = header(0, 1);
        v.extend_from_slice(&1u64.to_le_bytes());
        v.push(b'k');
        v.extend_from_slice(&9u32.to_le_bytes()); // array
        v.extend_from_slice(&4u32.to_le_bytes()); // of u32
        v.extend_from_slice(&(1u64 << 62).to_le_bytes());
        assert!(matches!(check(&v), Err(GgufCheckError::TooLarge { .. })));
        // arrays of arrays, nested deeper than allowed
        let mut v = header(0, 1);
        v.extend_from_slice(&1u64.to_le_bytes());
        v.push(b'k');
        v.extend_from_slice(&9u32.to_le_bytes());
        for _ in 0..10 {
            v.extend_from_slice(&9u32.to_le_bytes());
            v.extend_from_slice(&1u64.to_le_bytes());
        }
        v.extend_from_slice(&[0; 64]);
        assert!(matches!(check(&v), Err(GgufCheckError::TooLarge { .. })));
        // a tensor with 2^32 - 1 dimensions
        let mut v = header(1, 0);
        v.extend_from_slice(&1u64.to_le_bytes());
        v.push(b't');
        v.extend_from_slice(&u32::MAX.to_le_bytes());
        v.extend_from_slice(&[0; 64]);
        assert!(matches!(check(&v), Err(GgufCheckError::TooLarge { .. })));
        assert!(matches!(check(b"GGUF"), Err(GgufCheckError::Io { .. })));
        // a zero dimension before two whose product overflows: the element
        // count is 0 in this order, but overflows in the reversed order a
        // reader may use (the gguf fuzz target's crash)
        let big = 1u64 << 40;
        let mut v = header(1, 0);
        v.extend_from_slice(&1u64.to_le_bytes());
        v.push(b't');
        v.extend_from_slice(&3u32.to_le_bytes());
        for d in [0, big, big] {
            v.extend_from_slice(&d.to_le_bytes());
        }
        v.extend_from_slice(&0u32.to_le_bytes());
        v.extend_from_slice(&0u64.to_le_bytes());
        let len = 3 * big;
        let info = check_gguf_header(&v[..], len).unwrap();
        assert_eq!(info.tensors[0].1, None);
        // `general.alignment: 0` (the gguf fuzz target's second crash: a
        // division by zero in the reader); 0 in other value types too
        for (ty, bytes) in [(4u32, vec![0u8; 4]), (0, vec![0]), (3, vec![0, 0])] {
            let mut v = header(0, 1);
            let key = b"general.alignment";
            v.extend_from_slice(&(key.len() as u64).to_le_bytes());
            v.extend_from_slice(key);
            v.extend_from_slice(&ty.to_le_bytes());
            v.extend_from_slice(&bytes);
            assert!(
                matches!(check(&v), Err(GgufCheckError::ZeroAlignment { .. })),
                "type {ty}"
            );
        }
        // the third gguf crash: the key padded with NULs, which candle strips
        let mut v = header(0, 1);
        v.extend_from_slice(&20u64.to_le_bytes());
        v.extend_from_slice(b"general.alignment\0\0\0");
        v.extend_from_slice(&4u32.to_le_bytes());
        v.extend_from_slice(&0u32.to_le_bytes());
        assert!(matches!(
            check(&v),
            Err(GgufCheckError::ZeroAlignment { .. })
        ));
        let mut v = header(0, 1);
        v.extend_from_slice(&17u64.to_le_bytes());
        v.extend_from_slice(b"general.alignment");
        v.extend_from_slice(&4u32.to_le_bytes());
        v.extend_from_slice(&32u32.to_le_bytes());
        assert_eq!(check(&v).unwrap().metadata_entries, 1);
        assert!(matches!(
            check(b"GGML\x03\0\0\0"),
            Err(GgufCheckError::BadMagic { .. })
        ));
    }
}
