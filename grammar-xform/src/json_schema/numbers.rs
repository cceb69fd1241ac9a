//! Numbers and integers as regex terminals, with exact range constraints.
//!
//! * Integers: `minimum`/`maximum`/`exclusive*` (any numeric bound; for
//!   integers a non-integer bound rounds exactly) become an exact
//!   digit-range regex in canonical decimal (no leading zeros, no `-0`):
//!   [`uint_range`] splits `[lo, hi]` by digit count and then by common
//!   prefix, the classic range-to-regex construction.
//! * Numbers without bounds: the full JSON number syntax (RFC 8259 §6).
//! * Numbers with *integer* bounds: exact, over plain decimals
//!   `-?int(.frac)?` (no exponent). For an integer part `I` and fraction
//!   `F`, `I.F ≥ a ⇔ I ≥ a`, `I.F > a ⇔ I > a ∨ (I = a ∧ F ≠ 0)`,
//!   `I.F ≤ b ⇔ I < b ∨ (I = b ∧ F = 0)`, `I.F < b ⇔ I < b`; negative
//!   numbers mirror this on the magnitude. Exponent forms are not generated
//!   for bounded numbers (a documented incompleteness: `1e2` is not
//!   accepted for `maximum: 1000`, `100` is).
//! * Numbers with non-integer bounds are refused
//!   ([`SchemaError::Unsupported`](super::SchemaError)).

use serde_json::Number;

/// The JSON number syntax.
pub(crate) const NUMBER: &str = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?";
/// The JSON integer syntax (canonical: no `-0`).
pub(crate) const INTEGER: &str = r"(?:0|-?[1-9][0-9]*)";

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
pub(crate) fn integer_regex(b: &Bounds) -> Result<Option<String>, String> {
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
            Some(c.ok_or("bound out of range")?)
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
            Some(c.ok_or("bound out of range")?)
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

/// Fraction classes for one integer part.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Frac {
    Any,
    NonZero,
    Zero,
    None,
}

impl Frac {
    fn and(self, o: Frac) -> Frac {
        use Frac::*;
        match (self, o) {
            (None, _) | (_, None) => None,
            (Any, x) | (x, Any) => x,
            (NonZero, Zero) | (Zero, NonZero) => None,
            (x, _) => x,
        }
    }
    fn regex(self) -> Option<&'static str> {
        match self {
            Frac::Any => Some(r"(?:\.[0-9]+)?"),
            Frac::NonZero => Some(r"\.[0-9]*[1-9][0-9]*"),
            Frac::Zero => Some(r"(?:\.0+)?"),
            Frac::None => None,
        }
    }
}

/// Plain decimals `I` / `I.F` (`I` canonical, ≥ 0) whose value `x`
/// satisfies `lo ⊲ x ⊲ hi` for integer bounds.
fn magnitude(lo: (u128, bool), hi: Option<(u128, bool)>) -> Vec<String> {
    let mut out = Vec::new();
    let (a, ainc) = lo;
    if let Some((b, _)) = hi {
        if b < a {
            return out;
        }
    }
    let at_lo = if ainc { Frac::Any } else { Frac::NonZero };
    let upper_of = |i: u128| match hi {
        None => Frac::Any,
        Some((b, binc)) => {
            if i < b {
                Frac::Any
            } else if i == b {
                if binc {
                    Frac::Zero
                } else {
                    Frac::None
                }
            } else {
                Frac::None
            }
        }
    };
    let mut push = |i_re: String, f: Frac| {
        if let Some(fr) = f.regex() {
            out.push(format!("{i_re}{fr}"));
        }
    };
    push(a.to_string(), at_lo.and(upper_of(a)));
    match hi {
        None => {
            let interior = uint_range(a + 1, None);
            if !interior.is_empty() {
                push(alt(&interior), Frac::Any);
            }
        }
        Some((b, _)) if b > a => {
            if b > a + 1 {
                push(alt(&uint_range(a + 1, Some(b - 1))), Frac::Any);
            }
            push(b.to_string(), upper_of(b));
        }
        _ => {}
    }
    out
}

/// The regex of the numbers in the bounds; `Ok(None)` if there are none;
/// `Err` for non-integer bounds.
pub(crate) fn number_regex(b: &Bounds) -> Result<Option<String>, String> {
    if b.lo.is_none() && b.hi.is_none() {
        return Ok(Some(NUMBER.into()));
    }
    let int = |x: Option<(Num, bool)>| -> Result<Option<(i128, bool)>, String> {
        match x {
            None => Ok(None),
            Some((Num::Int(i), inc)) => Ok(Some((i, inc))),
            Some((Num::Float(f), _)) => Err(format!("non-integer bound {f} on a number")),
        }
    };
    let lo = int(b.lo)?;
    let hi = int(b.hi)?;
    let mut alts = Vec::new();
    // x ≥ 0
    let nonneg_possible = match hi {
        None => true,
        Some((h, inc)) => h > 0 || (h == 0 && inc),
    };
    if nonneg_possible {
        let l = match lo {
            Some((l, inc)) if l >= 0 => (l as u128, inc),
            _ => (0, true),
        };
        let h = hi.map(|(h, inc)| (h as u128, inc));
        alts.extend(magnitude(l, h));
    }
    // x = -m < 0, m > 0
    let neg_possible = lo.is_none_or(|(l, _)| l < 0);
    if neg_possible {
        let mlo = match hi {
            Some((h, inc)) if h < 0 => ((-h) as u128, inc),
            _ => (0, false),
        };
        let mhi = lo.map(|(l, inc)| ((-l) as u128, inc));
        let m = magnitude(mlo, mhi);
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
    use crate::dfa::TerminalDfa;
    use proptest::prelude::*;

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
        assert!(number_regex(&bounds).is_err());
        assert_eq!(
            integer_regex(&b(Some((5, true)), Some((4, true)))).unwrap(),
            None
        );
    }
}
