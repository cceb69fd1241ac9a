//! Numbers and integers as regex terminals, with exact range constraints.
//!
//! * Integers: `minimum`/`maximum`/`exclusive*` (any numeric bound; for
//!   integers a non-integer bound rounds exactly) become an exact
//!   digit-range regex in canonical decimal (no leading zeros, no `-0`):
//!   [`uint_range`] splits `[lo, hi]` by digit count and then by common
//!   prefix, the classic range-to-regex construction. Drafts 6+ compare
//!   by value ([`integer_value_regex`]): each integer also with a zero
//!   fraction (`2.0`), and zero also as `-0`; drafts 3–4 only the
//!   canonical integer text.
//! * Numbers are compared by value everywhere: zero may be written `-0`
//!   wherever `0` is allowed, and an `enum`/`const` member is the regex
//!   of the plain decimals with its value ([`value_regex`]).
//! * Numbers without bounds: the full JSON number syntax (RFC 8259 §6).
//! * Numbers with bounds: exact, over plain decimals `-?int(.frac)?` (no
//!   exponent). A bound is a decimal `a = A.D` (an integer, or the shortest
//!   decimal that round-trips to the schema's `f64`, i.e. what the schema
//!   says: `0.01`, `-459.67`). For `x = I.F`: `I` decides when it differs
//!   from `A`; when `I = A` the fraction digits are compared with `D` digit
//!   by digit, as zero-padded strings ([`Frac2`]: `F ≥ D` is "the first
//!   differing digit is larger", written as alternatives per position, so
//!   the regex has `O(|D|)` alternatives). Both bounds on one integer part
//!   give a two-sided comparison. Negative numbers mirror this on the
//!   magnitude. Exponent forms are not generated for bounded numbers (a
//!   documented incompleteness: `1e2` is not accepted for `maximum: 1000`,
//!   `100` is).
//! * `multipleOf` ([`Multiple`]): `10^-d` (`0.01`, `1`) restricts the
//!   fraction to `d` significant digits (digits past `d` must be `0`),
//!   combined exactly with any bounds; an integer `k` from 2 to
//!   [`MAX_MULTIPLE`] (without bounds, or with both bounds: then the
//!   multiples in range are listed) is a residue automaton over the
//!   decimal digits (then a zero fraction),
//!   emitted as a
//!   right-linear grammar (`emit`). Other values (`0.5`, `2.5`), and an
//!   integer `k ≥ 2` together with bounds, are refused
//!   ([`SchemaError::Unsupported`](super::SchemaError)). Numbers are
//!   compared as exact decimals, not as `f64` quotients (Python's
//!   `jsonschema` finds `0.07` no multiple of `0.01` because
//!   `0.07 / 0.01 = 7.000000000000001`; we accept it). Two `multipleOf`s
//!   in one conjunction merge into their least common multiple
//!   ([`lcm_multiple`], exact on the decimals).

use serde_json::Number;

use super::error::NumberError;

/// The JSON number syntax.
pub(crate) const NUMBER: &str = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?";
/// The JSON integer syntax (canonical: no `-0`): integers as drafts 3–4
/// read them, written without fraction.
pub(crate) const INTEGER: &str = r"(?:0|-?[1-9][0-9]*)";
/// The plain decimals whose value is an integer (drafts 6+): `-0` and a
/// zero fraction (`1.0`, `-0.00`) included, no exponent.
pub(crate) const INTEGER_VALUE: &str = r"-?(?:0|[1-9][0-9]*)(?:\.0+)?";
/// The zero fraction an integral value may carry (drafts 6+).
const ZERO_FRACTION: &str = r"(?:\.0+)?";
/// `-0` with any zero fraction: zero, negative sign (allowed wherever `0` is).
const NEGATIVE_ZERO: &str = r"-0(?:\.0+)?";

/// A bound value, kept exact when it is an integer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Num {
    Int(i128),
    Float(f64),
}

impl Num {
    pub fn from_json(n: &Number) -> Num {
        if let Some(i) = n.as_i64() {
            Num::Int(i as i128)
        } else if let Some(u) = n.as_u64() {
            Num::Int(u as i128)
        } else {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e30 {
                Num::Int(f as i128)
            } else {
                Num::Float(f)
            }
        }
    }
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
    /// The least integer ≥ self (`None` if not representable).
    fn ceil(self) -> Option<i128> {
        match self {
            Num::Int(i) => Some(i),
            Num::Float(f) if f.is_finite() && f.abs() < 1e30 => Some(f.ceil() as i128),
            _ => None,
        }
    }
    fn floor(self) -> Option<i128> {
        match self {
            Num::Int(i) => Some(i),
            Num::Float(f) if f.is_finite() && f.abs() < 1e30 => Some(f.floor() as i128),
            _ => None,
        }
    }
}

/// Bounds of a number: lower and upper, each with "inclusive".
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Bounds {
    pub lo: Option<(Num, bool)>,
    pub hi: Option<(Num, bool)>,
}

impl Bounds {
    /// Adds a lower bound, keeping the tighter one.
    pub fn lower(&mut self, v: Num, inclusive: bool) {
        let tighter = match self.lo {
            None => true,
            Some((o, oi)) => {
                v.as_f64() > o.as_f64() || (v.as_f64() == o.as_f64() && oi && !inclusive)
            }
        };
        if tighter {
            self.lo = Some((v, inclusive));
        }
    }
    pub fn upper(&mut self, v: Num, inclusive: bool) {
        let tighter = match self.hi {
            None => true,
            Some((o, oi)) => {
                v.as_f64() < o.as_f64() || (v.as_f64() == o.as_f64() && oi && !inclusive)
            }
        };
        if tighter {
            self.hi = Some((v, inclusive));
        }
    }
    /// Whether a value satisfies the bounds (for checking enum members).
    pub fn contains(&self, x: f64) -> bool {
        self.lo
            .is_none_or(|(v, inc)| if inc { x >= v.as_f64() } else { x > v.as_f64() })
            && self
                .hi
                .is_none_or(|(v, inc)| if inc { x <= v.as_f64() } else { x < v.as_f64() })
    }
}

fn ndigits(x: u128) -> usize {
    x.to_string().len()
}

/// Regex alternatives matching exactly the canonical decimal strings of
/// the integers in `[lo, hi]` (`hi = None`: unbounded).
pub(crate) fn uint_range(lo: u128, hi: Option<u128>) -> Vec<String> {
    let mut out = Vec::new();
    if hi.is_some_and(|h| h < lo) {
        return out;
    }
    let dl = ndigits(lo);
    let dh = hi.map(ndigits).unwrap_or(dl);
    for d in dl..=dh {
        let a = if d == dl {
            lo
        } else {
            10u128.pow(d as u32 - 1)
        };
        let b = match hi {
            Some(h) if d == dh => h,
            _ => 10u128.pow(d as u32) - 1,
        };
        same_len(
            a.to_string().as_bytes(),
            b.to_string().as_bytes(),
            "",
            &mut out,
        );
    }
    if hi.is_none() {
        out.push(format!("[1-9][0-9]{{{dl},}}"));
    }
    out
}

fn digit_class(a: u8, b: u8) -> String {
    if a == b {
        (a as char).to_string()
    } else if a == b'0' && b == b'9' {
        "[0-9]".into()
    } else {
        format!("[{}-{}]", a as char, b as char)
    }
}

fn any_digits(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "[0-9]".into(),
        n => format!("[0-9]{{{n}}}"),
    }
}

/// All digit strings of equal length between `a` and `b` (inclusive).
fn same_len(a: &[u8], b: &[u8], prefix: &str, out: &mut Vec<String>) {
    let n = a.len();
    if n == 0 {
        out.push(prefix.to_string());
        return;
    }
    if a[0] == b[0] {
        same_len(&a[1..], &b[1..], &format!("{prefix}{}", a[0] as char), out);
        return;
    }
    let zeros = a[1..].iter().all(|&x| x == b'0');
    let nines = b[1..].iter().all(|&x| x == b'9');
    let mut first = a[0];
    let mut last = b[0];
    if !zeros {
        let top = vec![b'9'; n - 1];
        same_len(&a[1..], &top, &format!("{prefix}{}", a[0] as char), out);
        first += 1;
    }
    if !nines {
        last -= 1;
    }
    if first <= last {
        out.push(format!(
            "{prefix}{}{}",
            digit_class(first, last),
            any_digits(n - 1)
        ));
    }
    if !nines {
        let bottom = vec![b'0'; n - 1];
        same_len(&bottom, &b[1..], &format!("{prefix}{}", b[0] as char), out);
    }
}

fn alt(v: &[String]) -> String {
    if v.len() == 1 {
        v[0].clone()
    } else {
        format!("(?:{})", v.join("|"))
    }
}

/// The regex of the integers in the bounds; `None` if there are none.
/// `Err` if a bound is not representable.
pub(crate) fn integer_regex(b: &Bounds) -> Result<Option<String>, NumberError> {
    if b.lo.is_none() && b.hi.is_none() {
        return Ok(Some(INTEGER.into()));
    }
    let lo = match b.lo {
        None => None,
        Some((v, inc)) => {
            let c = if inc {
                v.ceil()
            } else {
                v.floor().map(|f| f + 1)
            };
            Some(c.ok_or(NumberError::IntegerBoundOutOfRange)?)
        }
    };
    let hi = match b.hi {
        None => None,
        Some((v, inc)) => {
            let c = if inc {
                v.floor()
            } else {
                v.ceil().map(|f| f - 1)
            };
            Some(c.ok_or(NumberError::IntegerBoundOutOfRange)?)
        }
    };
    if let (Some(l), Some(h)) = (lo, hi) {
        if l > h {
            return Ok(None);
        }
    }
    let mut alts = Vec::new();
    // non-negative part
    if hi.is_none_or(|h| h >= 0) {
        let l = lo.unwrap_or(0).max(0) as u128;
        alts.extend(uint_range(l, hi.map(|h| h as u128)));
    }
    // negative part: -m with m in [max(1, -hi), -lo]
    if lo.is_none_or(|l| l < 0) {
        let mlo = hi.map(|h| (-h).max(1)).unwrap_or(1).max(1) as u128;
        let mhi = lo.map(|l| (-l) as u128);
        let neg = uint_range(mlo, mhi);
        if !neg.is_empty() {
            alts.push(format!("-{}", alt(&neg)));
        }
    }
    Ok(if alts.is_empty() {
        None
    } else {
        Some(alt(&alts))
    })
}

/// [`integer_regex`] by value, as drafts 6+ read `integer`: every integer
/// in the bounds also with a zero fraction (`2.0`, `2.00`), and zero also
/// as `-0` (`-0.0`). No exponent forms (module docs).
pub(crate) fn integer_value_regex(b: &Bounds) -> Result<Option<String>, NumberError> {
    if b.lo.is_none() && b.hi.is_none() {
        return Ok(Some(INTEGER_VALUE.into()));
    }
    Ok(integer_regex(b)?.map(|r| {
        if b.contains(0.0) {
            format!("(?:{r}|-0){ZERO_FRACTION}")
        } else {
            // `r` has no top-level alternation (one group or one sequence)
            format!("{r}{ZERO_FRACTION}")
        }
    }))
}

/// The regex of the plain decimal texts whose value is `n`: `2`, `2.0`,
/// `2.00` for `2`; `2.5`, `2.50` for `2.5`; `0`, `-0`, `0.0`, `-0.0` for
/// zero (drafts 6+ compare numbers by value; no exponent forms). With
/// `lexical` (drafts 3–4 `integer`) only the integer spelling of an
/// integral value, `None` for another value. `None` too for values beyond
/// `u128`.
pub(crate) fn value_regex(n: &Number, lexical: bool) -> Option<String> {
    let (neg, d) = signed_dec(Num::from_json(n)).ok()?;
    let sign = match (d == Dec::zero(), neg) {
        (true, _) if lexical => "",
        (true, _) => "-?",
        (false, true) => "-",
        (false, false) => "",
    };
    let frac = std::str::from_utf8(&d.frac).ok()?;
    Some(match (frac.is_empty(), lexical) {
        (true, true) => format!("{sign}{}", d.int),
        (true, false) => format!("{sign}{}{ZERO_FRACTION}", d.int),
        (false, true) => return None,
        (false, false) => format!("{sign}{}\\.{frac}0*", d.int),
    })
}

/// A non-negative decimal: integer part and fraction digits (ASCII, no
/// trailing zeros), so the derived order is the numeric order.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Dec {
    pub int: u128,
    pub frac: Vec<u8>,
}

impl Dec {
    /// Parses `d+(.d+)?` (the form `f64`'s `Display` writes: shortest
    /// round-trip digits, never an exponent).
    fn parse(s: &str) -> Option<Dec> {
        let (i, f) = s.split_once('.').unwrap_or((s, ""));
        if i.is_empty()
            || !i.bytes().all(|b| b.is_ascii_digit())
            || !f.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut frac = f.as_bytes().to_vec();
        while frac.last() == Some(&b'0') {
            frac.pop();
        }
        Some(Dec {
            int: i.parse().ok()?,
            frac,
        })
    }

    fn zero() -> Dec {
        Dec {
            int: 0,
            frac: Vec::new(),
        }
    }
}

/// A bound as (negative, magnitude): exact for integers; a non-integer
/// `f64` is taken as the shortest decimal that round-trips to it (what
/// serde_json wrote, e.g. `0.1` for `0.1`), so comparisons are exact on
/// the decimal the schema author wrote.
pub(crate) fn signed_dec(n: Num) -> Result<(bool, Dec), NumberError> {
    match n {
        Num::Int(i) => Ok((
            i < 0,
            Dec {
                int: i.unsigned_abs(),
                frac: Vec::new(),
            },
        )),
        Num::Float(f) if f.is_finite() => {
            let d = Dec::parse(&format!("{}", f.abs())).ok_or(NumberError::BoundOutOfRange(f))?;
            Ok((f < 0.0 && d != Dec::zero(), d))
        }
        Num::Float(f) => Err(NumberError::BoundNotFinite(f)),
    }
}

/// What `multipleOf` allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Multiple {
    /// Multiples of `10^-d` (`d = 0`: the integers).
    Grid(usize),
    /// Integer multiples of `k ≥ 2`.
    Int(u64),
}

/// Most `k` of `multipleOf: k` (the grammar has `k` residue states).
pub(crate) const MAX_MULTIPLE: u64 = 10_000;

impl Multiple {
    /// Reads `multipleOf`; `Err(reason)` for values that are neither a
    /// power of ten nor an integer up to [`MAX_MULTIPLE`].
    pub fn new(n: &Number) -> Result<Multiple, NumberError> {
        let (neg, d) = signed_dec(Num::from_json(n))?;
        if neg || d == Dec::zero() {
            return Err(NumberError::MultipleNotPositive);
        }
        if d.int == 0 {
            let (last, rest) = d.frac.split_last().unwrap_or((&b'0', &[]));
            if *last == b'1' && rest.iter().all(|&c| c == b'0') {
                return Ok(Multiple::Grid(d.frac.len()));
            }
        } else if d.frac.is_empty() {
            return Ok(match d.int {
                1 => Multiple::Grid(0),
                k if k <= MAX_MULTIPLE as u128 => Multiple::Int(k as u64),
                _ => return Err(NumberError::MultipleTooLarge { max: MAX_MULTIPLE }),
            });
        }
        Err(NumberError::MultipleUnsupported(n.clone()))
    }

    /// Whether a number (as serde_json holds it) is a multiple.
    pub fn contains(self, n: &Number) -> bool {
        let Ok((_, d)) = signed_dec(Num::from_json(n)) else {
            return false;
        };
        match self {
            Multiple::Grid(k) => d.frac.len() <= k,
            Multiple::Int(k) => d.frac.is_empty() && d.int % k as u128 == 0,
        }
    }
}

/// `n` as an exact rational `N / 10^s` (`N > 0`), read as the decimal
/// the schema wrote ([`signed_dec`]); `None` for zero, negative and
/// unrepresentable values.
fn scaled(n: &Number) -> Option<(u128, u32)> {
    let (neg, d) = signed_dec(Num::from_json(n)).ok()?;
    if neg || d == Dec::zero() {
        return None;
    }
    let s = u32::try_from(d.frac.len()).ok()?;
    let mut v = d.int.checked_mul(10u128.checked_pow(s)?)?;
    if !d.frac.is_empty() {
        v = v.checked_add(std::str::from_utf8(&d.frac).ok()?.parse::<u128>().ok()?)?;
    }
    Some((v, s))
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// The least common multiple of two positive `multipleOf` values, exactly:
/// with `a = A / 10^m` and `b = B / 10^m`, a number is a multiple of both
/// iff it is a multiple of `lcm(A, B) / 10^m`. `None` when a value is not
/// positive, or the result does not fit `u128` or is no `f64` that reads
/// back as the same decimal.
pub(crate) fn lcm_multiple(a: &Number, b: &Number) -> Option<Number> {
    let ((x, s), (y, t)) = (scaled(a)?, scaled(b)?);
    let m = s.max(t);
    let x = x.checked_mul(10u128.checked_pow(m - s)?)?;
    let y = y.checked_mul(10u128.checked_pow(m - t)?)?;
    let l = (x / gcd(x, y)).checked_mul(y)?;
    let p = 10u128.checked_pow(m)?;
    if l % p == 0 {
        let i = l / p;
        return match u64::try_from(i) {
            Ok(i) => Some(Number::from(i)),
            Err(_) => None,
        };
    }
    let frac = format!("{:0w$}", l % p, w = m as usize);
    let text = format!("{}.{}", l / p, frac.trim_end_matches('0'));
    let n = Number::from_f64(text.parse().ok()?)?;
    // the f64 must read back as the decimal it stands for
    (format!("{}", n.as_f64()?) == text).then_some(n)
}

/// A language of fraction digit strings `F` (`x = I.F`; the empty string
/// stands for "no fraction part", i.e. all zeros): whether it contains the
/// empty string, and regexes of its non-empty members.
#[derive(Clone, Debug, Default)]
struct Lang {
    eps: bool,
    ne: Vec<String>,
}

impl Lang {
    fn is_empty(&self) -> bool {
        !self.eps && self.ne.is_empty()
    }
    /// The regex of the whole language (`""` allowed), as a suffix.
    fn suffix(&self) -> String {
        match (self.eps, self.ne.len()) {
            (true, 0) => String::new(),
            (true, _) => format!("(?:{})?", self.ne.join("|")),
            (false, 1) => self.ne[0].clone(),
            (false, _) => format!("(?:{})", self.ne.join("|")),
        }
    }
}

/// Builds fraction languages, position by position. With `limit = Some(d)`
/// every digit at position `≥ d` must be `0` (`x` a multiple of `10^-d`).
#[derive(Clone, Copy)]
struct Frac2 {
    limit: Option<usize>,
}

impl Frac2 {
    /// Highest digit allowed at position `p`.
    fn top(self, p: usize) -> u8 {
        match self.limit {
            Some(d) if p >= d => b'0',
            _ => b'9',
        }
    }

    /// `d · L` as one alternative, if `d` is allowed at `p` and `L` is
    /// non-empty.
    fn prefixed(self, p: usize, d: u8, l: Lang, out: &mut Vec<String>) {
        if d <= self.top(p) && !l.is_empty() {
            out.push(format!("{}{}", d as char, l.suffix()));
        }
    }

    /// Digits in `[a, b]` at position `p`, then anything allowed.
    fn class_then_any(self, p: usize, a: u8, b: u8, out: &mut Vec<String>) {
        let b = b.min(self.top(p));
        if a <= b {
            out.push(format!("{}{}", digit_class(a, b), self.any(p + 1).suffix()));
        }
    }

    /// Every digit string allowed from position `p` on.
    fn any(self, p: usize) -> Lang {
        match self.limit {
            None => Lang {
                eps: true,
                ne: vec!["[0-9]+".into()],
            },
            Some(d) if p >= d => Lang {
                eps: true,
                ne: vec!["0+".into()],
            },
            Some(d) => Lang {
                eps: true,
                ne: vec![format!("[0-9]{{1,{}}}0*", d - p)],
            },
        }
    }

    /// Strings from `p` on with some non-zero digit.
    fn nonzero(self, p: usize) -> Lang {
        let ne = match self.limit {
            None => vec!["[0-9]*[1-9][0-9]*".to_string()],
            Some(d) if p >= d => vec![],
            Some(d) if d - p == 1 => vec!["[1-9]0*".to_string()],
            Some(d) => vec![format!("[0-9]{{0,{}}}[1-9]0*", d - p - 1)],
        };
        Lang { eps: false, ne }
    }

    /// Only zeros from `p` on.
    fn zeros(self) -> Lang {
        Lang {
            eps: true,
            ne: vec!["0+".into()],
        }
    }

    /// `0.F ≥ 0.s` (`strict`: `>`), `F` read from position `p`.
    fn lower(self, s: &[u8], strict: bool, p: usize) -> Lang {
        let Some((&d, rest)) = s.split_first() else {
            return if strict { self.nonzero(p) } else { self.any(p) };
        };
        let mut ne = Vec::new();
        if d < b'9' {
            self.class_then_any(p, d + 1, b'9', &mut ne);
        }
        self.prefixed(p, d, self.lower(rest, strict, p + 1), &mut ne);
        Lang { eps: false, ne }
    }

    /// `0.F ≤ 0.s` (`strict`: `<`).
    fn upper(self, s: &[u8], strict: bool, p: usize) -> Lang {
        let Some((&d, rest)) = s.split_first() else {
            return if strict {
                Lang::default()
            } else {
                self.zeros()
            };
        };
        let mut ne = Vec::new();
        if d > b'0' {
            self.class_then_any(p, b'0', d - 1, &mut ne);
        }
        self.prefixed(p, d, self.upper(rest, strict, p + 1), &mut ne);
        Lang { eps: true, ne }
    }

    /// `0.lo ⊲ 0.F ⊲ 0.hi`; needs `lo ≤ hi`.
    fn range(self, lo: &[u8], ls: bool, hi: &[u8], hs: bool, p: usize) -> Lang {
        if lo.is_empty() && !ls {
            return self.upper(hi, hs, p);
        }
        let Some((&b, hrest)) = hi.split_first() else {
            return Lang::default(); // 0.F ≤ 0 but 0.F > 0 or ≥ lo > 0
        };
        let (a, lrest) = lo.split_first().map_or((b'0', &[][..]), |(&a, r)| (a, r));
        let mut ne = Vec::new();
        if a == b {
            self.prefixed(p, a, self.range(lrest, ls, hrest, hs, p + 1), &mut ne);
        } else {
            self.prefixed(p, a, self.lower(lrest, ls, p + 1), &mut ne);
            if a + 1 < b {
                self.class_then_any(p, a + 1, b - 1, &mut ne);
            }
            self.prefixed(p, b, self.upper(hrest, hs, p + 1), &mut ne);
        }
        Lang { eps: false, ne }
    }
}

/// The fraction part's regex (`(\.F)?` for the language of `F`); `None`
/// when no fraction (not even none) qualifies.
fn frac_regex(l: &Lang) -> Option<String> {
    match (l.eps, l.ne.len()) {
        (false, 0) => None,
        (true, 0) => Some(String::new()),
        (true, _) => Some(format!("(?:\\.(?:{}))?", l.ne.join("|"))),
        (false, _) => Some(format!("\\.(?:{})", l.ne.join("|"))),
    }
}

/// Plain decimals `I` / `I.F` (`I` canonical, ≥ 0) whose value `x`
/// satisfies `lo ⊲ x ⊲ hi` for decimal bounds: the integer part decides
/// unless it equals a bound's, where the fraction is compared digit by
/// digit ([`Frac2`]).
fn magnitude_dec(lo: (&Dec, bool), hi: Option<(&Dec, bool)>, fr: Frac2) -> Vec<String> {
    let mut out = Vec::new();
    let (a, ainc) = lo;
    if let Some((b, binc)) = hi {
        if b < a || (b == a && !(ainc && binc)) {
            return out;
        }
    }
    let mut push = |i_re: String, l: Lang| {
        if let Some(f) = frac_regex(&l) {
            out.push(format!("{i_re}{f}"));
        }
    };
    match hi {
        Some((b, binc)) if b.int == a.int => {
            push(
                a.int.to_string(),
                fr.range(&a.frac, !ainc, &b.frac, !binc, 0),
            );
        }
        _ => {
            push(a.int.to_string(), fr.lower(&a.frac, !ainc, 0));
            match hi {
                None => {
                    let interior = uint_range(a.int + 1, None);
                    push(alt(&interior), fr.any(0));
                }
                Some((b, binc)) => {
                    if b.int > a.int + 1 {
                        push(alt(&uint_range(a.int + 1, Some(b.int - 1))), fr.any(0));
                    }
                    push(b.int.to_string(), fr.upper(&b.frac, !binc, 0));
                }
            }
        }
    }
    out
}

/// The regex of the numbers in the bounds; `Ok(None)` if there are none;
/// `Err` for bounds out of range.
#[cfg(test)]
pub(crate) fn number_regex(b: &Bounds) -> Result<Option<String>, NumberError> {
    number_regex_multiple(b, None)
}

/// [`number_regex`] restricted to multiples of `10^-d` (`frac_digits =
/// Some(d)`): at most `d` non-zero fraction digits.
pub(crate) fn number_regex_multiple(
    b: &Bounds,
    frac_digits: Option<usize>,
) -> Result<Option<String>, NumberError> {
    if b.lo.is_none() && b.hi.is_none() && frac_digits.is_none() {
        return Ok(Some(NUMBER.into()));
    }
    let fr = Frac2 { limit: frac_digits };
    let lo =
        b.lo.map(|(v, inc)| signed_dec(v).map(|d| (d, inc)))
            .transpose()?;
    let hi =
        b.hi.map(|(v, inc)| signed_dec(v).map(|d| (d, inc)))
            .transpose()?;
    let zero = Dec::zero();
    let mut alts = Vec::new();
    // x ≥ 0
    let nonneg_possible = match &hi {
        None => true,
        Some(((neg, h), inc)) => !*neg && (*h != zero || *inc),
    };
    if nonneg_possible {
        let l = match &lo {
            Some(((false, l), inc)) => (l, *inc),
            _ => (&zero, true),
        };
        let h = hi.as_ref().map(|((_, h), inc)| (h, *inc));
        alts.extend(magnitude_dec(l, h, fr));
    }
    // x = -m < 0, m > 0
    let neg_possible = match &lo {
        None => true,
        Some(((neg, _), _)) => *neg,
    };
    // zero written `-0`: a value like `0` (drafts compare by value)
    if b.contains(0.0) {
        alts.push(NEGATIVE_ZERO.to_string());
    }
    if neg_possible {
        let mlo = match &hi {
            Some(((true, h), inc)) => (h, *inc),
            _ => (&zero, false),
        };
        let mhi = lo.as_ref().map(|((_, l), inc)| (l, *inc));
        let m = magnitude_dec(mlo, mhi, fr);
        if !m.is_empty() {
            alts.push(format!("-{}", alt(&m)));
        }
    }
    Ok(if alts.is_empty() {
        None
    } else {
        Some(alt(&alts))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use zapspec_grammar::dfa::TerminalDfa;

    fn b(lo: Option<(i64, bool)>, hi: Option<(i64, bool)>) -> Bounds {
        Bounds {
            lo: lo.map(|(v, i)| (Num::Int(v as i128), i)),
            hi: hi.map(|(v, i)| (Num::Int(v as i128), i)),
        }
    }

    proptest! {
        /// The digit-range regex accepts exactly the integers in range,
        /// checked by brute force over a window around the bounds.
        #[test]
        fn integer_ranges_exact(lo in proptest::option::of(-1200i64..1200), span in 0i64..2500, hi_some in any::<bool>(), li in any::<bool>(), hi_inc in any::<bool>()) {
            let hi = lo.map(|l| l + span).or(Some(span - 1200)).filter(|_| hi_some);
            let bounds = b(lo.map(|l| (l, li)), hi.map(|h| (h, hi_inc)));
            let re = integer_regex(&bounds).unwrap();
            let d = re.as_ref().map(|r| TerminalDfa::regex(&format!("^(?:{r})$")).unwrap());
            for x in -2600i64..2600 {
                let want = bounds.contains(x as f64);
                let got = d.as_ref().is_some_and(|d| d.matches(x.to_string().as_bytes()));
                prop_assert_eq!(got, want, "x={} re={:?}", x, re);
            }
            if let Some(d) = &d {
                prop_assert!(!d.matches(b"-0") && !d.matches(b"01"));
            }
            // by value: the same integers, also with a zero fraction, and
            // zero also as `-0`
            let rv = integer_value_regex(&bounds).unwrap();
            let dv = rv.as_ref().map(|r| TerminalDfa::regex(&format!("^(?:{r})$")).unwrap());
            for x in -1300i64..1300 {
                let want = bounds.contains(x as f64);
                for t in [x.to_string(), format!("{x}.0"), format!("{x}.00")] {
                    let got = dv.as_ref().is_some_and(|d| d.matches(t.as_bytes()));
                    prop_assert_eq!(got, want, "t={} re={:?}", t, rv);
                }
                let half = format!("{x}.5");
                prop_assert!(!dv.as_ref().is_some_and(|d| d.matches(half.as_bytes())));
            }
            let zero = bounds.contains(0.0);
            for t in ["-0", "-0.0", "0.000"] {
                prop_assert_eq!(dv.as_ref().is_some_and(|d| d.matches(t.as_bytes())), zero, "{}", t);
            }
        }

        /// Number ranges with integer bounds, against f64 comparison on
        /// decimals with up to two fraction digits.
        #[test]
        fn number_ranges_exact(lo in proptest::option::of(-30i64..30), span in 0i64..40, hi_some in any::<bool>(), li in any::<bool>(), hi_inc in any::<bool>()) {
            let hi = lo.map(|l| l + span).or(Some(span - 20)).filter(|_| hi_some);
            let bounds = b(lo.map(|l| (l, li)), hi.map(|h| (h, hi_inc)));
            let re = number_regex(&bounds).unwrap();
            let d = re.as_ref().map(|r| TerminalDfa::regex(&format!("^(?:{r})$")).unwrap());
            for x100 in -8000i64..8000 {
                let x = x100 as f64 / 100.0;
                for s in [format!("{}", x100 / 100), format!("{:.2}", x), format!("{:.1}", x)] {
                    let v: f64 = s.parse().unwrap();
                    if s.starts_with("-0") && v == 0.0 { continue; }
                    let want = bounds.contains(v);
                    let got = d.as_ref().is_some_and(|d| d.matches(s.as_bytes()));
                    prop_assert_eq!(got, want, "s={} re={:?}", s, re);
                }
            }
        }
    }

    /// `text` as a rational `n / 10^s`.
    fn rational(text: &str) -> (i128, u32) {
        let (i, f) = text.split_once('.').unwrap_or((text, ""));
        let neg = i.starts_with('-');
        let digits = format!("{}{f}", i.trim_start_matches('-'));
        let n: i128 = digits.parse().unwrap();
        (if neg { -n } else { n }, f.len() as u32)
    }

    /// `a ⋚ b` for rationals.
    fn cmp(a: (i128, u32), b: (i128, u32)) -> std::cmp::Ordering {
        let s = a.1.max(b.1);
        (a.0 * 10i128.pow(s - a.1)).cmp(&(b.0 * 10i128.pow(s - b.1)))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Decimal bounds and `multipleOf: 10^-d`, against exact rational
        /// arithmetic on every decimal `N / 10^s` with `|N| < 1500`,
        /// `s ≤ 3`, written with exactly `s` fraction digits.
        #[test]
        fn decimal_bounds_and_grids_exact(
            lo in proptest::option::of((-300i64..300, 0u32..3, any::<bool>())),
            hi in proptest::option::of((-300i64..300, 0u32..3, any::<bool>())),
            grid in proptest::option::of(0usize..4),
        ) {
            let num = |a: i64, s: u32| -> (Num, (i128, u32)) {
                let f = a as f64 / 10f64.powi(s as i32);
                let n = if f.fract() == 0.0 { Num::Int(f as i128) } else { Num::Float(f) };
                (n, (a as i128, s))
            };
            let lo = lo.map(|(a, s, inc)| (num(a, s), inc));
            let hi = hi.map(|(a, s, inc)| (num(a, s), inc));
            let bounds = Bounds {
                lo: lo.map(|((n, _), inc)| (n, inc)),
                hi: hi.map(|((n, _), inc)| (n, inc)),
            };
            let re = number_regex_multiple(&bounds, grid).unwrap();
            let d = re.as_ref().map(|r| TerminalDfa::regex(&format!("^(?:{r})$")).unwrap());
            for n in -1500i128..1500 {
                for s in 0u32..=3 {
                    let text = if s == 0 {
                        n.to_string()
                    } else {
                        let p = 10i128.pow(s);
                        let sign = if n < 0 { "-" } else { "" };
                        format!("{sign}{}.{:0w$}", n.abs() / p, n.abs() % p, w = s as usize)
                    };
                    if n == 0 && s > 0 { continue; }
                    let x = rational(&text);
                    let want = lo.is_none_or(|((_, b), inc)| {
                        let c = cmp(x, b);
                        c.is_gt() || (inc && c.is_eq())
                    }) && hi.is_none_or(|((_, b), inc)| {
                        let c = cmp(x, b);
                        c.is_lt() || (inc && c.is_eq())
                    }) && grid.is_none_or(|g| s as usize <= g || n % 10i128.pow(s - g as u32) == 0);
                    let got = d.as_ref().is_some_and(|d| d.matches(text.as_bytes()));
                    prop_assert_eq!(got, want, "{} re={:?} bounds={:?} grid={:?}", text, re, bounds, grid);
                }
            }
        }
    }

    #[test]
    fn multiple_of_values() {
        let m = |v: serde_json::Value| Multiple::new(v.as_number().unwrap());
        assert_eq!(m(serde_json::json!(0.01)), Ok(Multiple::Grid(2)));
        assert_eq!(m(serde_json::json!(1.0)), Ok(Multiple::Grid(0)));
        assert_eq!(m(serde_json::json!(1)), Ok(Multiple::Grid(0)));
        assert_eq!(m(serde_json::json!(3)), Ok(Multiple::Int(3)));
        assert!(m(serde_json::json!(0.5)).is_err());
        assert!(m(serde_json::json!(2.5)).is_err());
        assert!(m(serde_json::json!(0)).is_err());
        assert!(m(serde_json::json!(-1)).is_err());
        let n = |v: serde_json::Value| v.as_number().unwrap().clone();
        assert!(Multiple::Grid(2).contains(&n(serde_json::json!(12.34))));
        assert!(!Multiple::Grid(1).contains(&n(serde_json::json!(12.34))));
        assert!(Multiple::Int(3).contains(&n(serde_json::json!(-6))));
        assert!(Multiple::Int(3).contains(&n(serde_json::json!(6.0))));
        assert!(!Multiple::Int(3).contains(&n(serde_json::json!(7))));
    }

    #[test]
    fn least_common_multiples_are_exact() {
        let n = |v: serde_json::Value| v.as_number().unwrap().clone();
        let l = |a, b| lcm_multiple(&n(a), &n(b)).map(|x| x.to_string());
        use serde_json::json;
        assert_eq!(l(json!(2), json!(3)).as_deref(), Some("6"));
        assert_eq!(l(json!(6), json!(4)).as_deref(), Some("12"));
        assert_eq!(l(json!(0.01), json!(3)).as_deref(), Some("3"));
        assert_eq!(l(json!(0.5), json!(0.3)).as_deref(), Some("1.5"));
        assert_eq!(l(json!(0.25), json!(0.1)).as_deref(), Some("0.5"));
        assert_eq!(l(json!(2.0), json!(1)).as_deref(), Some("2"));
        assert_eq!(l(json!(0), json!(3)), None);
        assert_eq!(l(json!(-2), json!(3)), None);
        // by brute force: x (in hundredths) is a multiple of both iff of
        // the lcm
        for (a, b) in [(25u32, 10u32), (50, 30), (200, 300), (4, 6), (1, 7)] {
            let (fa, fb) = (a as f64 / 100.0, b as f64 / 100.0);
            let lc = lcm_multiple(&n(json!(fa)), &n(json!(fb))).unwrap();
            let lc = (lc.as_f64().unwrap() * 100.0).round() as u32;
            for x in 0..5000u32 {
                assert_eq!(x % a == 0 && x % b == 0, x % lc == 0, "{a} {b} {x}");
            }
        }
    }

    #[test]
    fn big_and_float_bounds() {
        let bounds = Bounds {
            lo: Some((Num::Float(0.5), true)),
            hi: Some((Num::Int(10_000_000_000), false)),
        };
        let d = TerminalDfa::regex(&integer_regex(&bounds).unwrap().unwrap()).unwrap();
        assert!(
            !d.matches(b"0")
                && d.matches(b"1")
                && d.matches(b"9999999999")
                && !d.matches(b"10000000000")
        );
        let r = number_regex(&bounds).unwrap().unwrap();
        let d = TerminalDfa::regex(&r).unwrap();
        assert!(
            d.matches(b"0.5")
                && !d.matches(b"0.49")
                && d.matches(b"9999999999.99")
                && !d.matches(b"10000000000")
        );
        assert_eq!(
            integer_regex(&b(Some((5, true)), Some((4, true)))).unwrap(),
            None
        );
    }
}
