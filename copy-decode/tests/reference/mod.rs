//! The reference recognizer (the test oracle): a direct, simple parse of
//! the surface syntax, written independently of the byte automaton.
//! Number viability is checked by enumerating `[lo, hi]`, so it costs
//! `O(|bytes| + n · log n)` per call — for tests only.

/// How a parse of one piece went.
enum R {
    /// The piece ended at this offset.
    Next(usize),
    /// The input ended inside the piece, which could still be completed.
    Partial,
    /// No program continues.
    Fail,
}

fn lit(b: &[u8], pos: usize, lit: &[u8]) -> R {
    let rest = &b[pos..];
    if rest.starts_with(lit) {
        R::Next(pos + lit.len())
    } else if lit.starts_with(rest) {
        R::Partial
    } else {
        R::Fail
    }
}

fn number(b: &[u8], pos: usize, lo: u64, hi: u64) -> (R, u64) {
    let len = b[pos..].iter().take_while(|c| c.is_ascii_digit()).count();
    let s = &b[pos..pos + len];
    if pos + len == b.len() {
        let ok = (lo..=hi).any(|x| x.to_string().as_bytes().starts_with(s));
        return (if ok { R::Partial } else { R::Fail }, 0);
    }
    for x in lo..=hi {
        if x.to_string().as_bytes() == s {
            return (R::Next(pos + len), x);
        }
    }
    (R::Fail, 0)
}

fn body(b: &[u8], pos: usize) -> R {
    let mut i = pos;
    let utf8_ok = |end: usize, partial: bool| match std::str::from_utf8(&b[pos..end]) {
        Ok(_) => true,
        Err(e) => partial && e.error_len().is_none(),
    };
    while i < b.len() {
        if b[i] == b'\\' {
            match b.get(i + 1) {
                None => {
                    return if utf8_ok(b.len(), true) {
                        R::Partial
                    } else {
                        R::Fail
                    }
                }
                Some(b'\\' | b'/') => i += 2,
                Some(_) => return R::Fail,
            }
        } else if b[i..].starts_with(b"</gen>") {
            return if utf8_ok(i, false) {
                R::Next(i + 6)
            } else {
                R::Fail
            };
        } else {
            i += 1;
        }
    }
    if utf8_ok(b.len(), true) {
        R::Partial
    } else {
        R::Fail
    }
}

/// `Some(true)`: a complete program; `Some(false)`: a proper prefix of
/// one; `None`: neither.
fn parse(b: &[u8], n: u64) -> Option<bool> {
    macro_rules! go {
        ($e:expr) => {
            match $e {
                R::Next(p) => p,
                R::Partial => return Some(false),
                R::Fail => return None,
            }
        };
    }
    let mut pos = go!(lit(b, 0, b"<program>\n"));
    loop {
        if pos == b.len() {
            return Some(false);
        }
        match b.get(pos + 1) {
            None => return (b[pos] == b'<').then_some(false),
            Some(b'/') => {
                let p = go!(lit(b, pos, b"</program>"));
                return (p == b.len()).then_some(true);
            }
            Some(b'c') if n >= 1 => {
                pos = go!(lit(b, pos, b"<copy lines=\""));
                let (r, i) = number(b, pos, 1, n);
                pos = go!(r);
                pos = go!(lit(b, pos, b"-"));
                let (r, _) = number(b, pos, i, n);
                pos = go!(r);
                pos = go!(lit(b, pos, b"\"/>\n"));
            }
            Some(b'g') => {
                pos = go!(lit(b, pos, b"<gen>"));
                pos = go!(body(b, pos));
                pos = go!(lit(b, pos, b"\n"));
            }
            Some(_) => return None,
        }
    }
}

/// True when `bytes` is a prefix (proper or not) of a valid program
/// for a document of `n` lines.
pub fn is_program_prefix(bytes: &[u8], n: u64) -> bool {
    parse(bytes, n).is_some()
}

/// True when `bytes` is a complete valid program for `n` lines.
pub fn is_program(bytes: &[u8], n: u64) -> bool {
    parse(bytes, n) == Some(true)
}
