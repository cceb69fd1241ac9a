//! `format` as regexes over the decoded string (regex-syntax dialect,
//! full match).
//!
//! Every format name the JSON Schema specification defines (drafts 4 to
//! 2020-12) is in exactly one of three classes ([`lookup`]):
//!
//! * **Exact**: the regex is the RFC grammar the specification cites.
//!   `date` (RFC 3339 `full-date`, month lengths and leap years),
//!   `duration` (RFC 3339 Appendix A), `uuid` (RFC 4122 hex form, either
//!   case), `ipv4` (RFC 2673 dotted quad, no leading zeros), `ipv6`
//!   (RFC 4291 §2.2, all three text forms with `::` compression),
//!   `uri` / `uri-reference` (RFC 3986 `URI` / `URI-reference`, IP
//!   literals included), `json-pointer` (RFC 6901),
//!   `relative-json-pointer` (draft-handrews-relative-json-pointer-01),
//!   `uri-template` (RFC 6570 §2: literals and level-4 expressions).
//! * **Sound bounded subsets**, where the exact language needs a counter
//!   no small automaton has; every string accepted is valid, and the
//!   strings left out are listed here:
//!   - `time` / `date-time` (RFC 3339 `full-time` / `date-time`): a leap
//!     second (`:60`) only as `23:59:60` in UTC (`Z` or `±00:00`); a leap
//!     second at another offset (valid when it is 23:59:60 UTC) is left
//!     out (its exact language needs the offset arithmetic, ~10⁴ states).
//!   - `hostname` (RFC 1123 §2.1 labels; total length ≤ 253): letters,
//!     digits and inner hyphens in labels of 1–63 characters, no label
//!     with `--` in positions 3–4 (RFC 5891 reserves those for A-labels,
//!     whose Punycode is not regular), and the length bound as three tiers
//!     — up to 3 labels of ≤ 63 characters, up to 8 of ≤ 30, up to 16 of
//!     ≤ 14 — each of which is within 253 characters.
//!   - `email` (RFC 5321 `Mailbox`): a local part of ≤ 64 characters
//!     (§4.5.3.1.1), `@`, a `hostname` as above (no address literals).
//!     The local part is a `Dot-string` in tiers (one atom of ≤ 64, up to
//!     2 of ≤ 31, up to 4 of ≤ 15, up to 8 of ≤ 7) or a `Quoted-string`
//!     (§4.1.2: `"` `qtextSMTP` or `quoted-pairSMTP`s `"`, exact within
//!     the 64 characters, [`quoted_local_part`]) whose quoted pairs escape
//!     a visible character (`\"`, `\\`, `\a`): the pair `\ ` (backslash,
//!     space), which RFC 5321 allows, is left out, as the `jsonschema`
//!     crate (the oracle of the tests, after RFC 5322's `VCHAR`) refuses it;
//!     a tab, which that crate lets in, is refused (no `qtextSMTP`).
//! * **Refused** (no regular or no practical exact language):
//!   `idn-email`, `idn-hostname` (IDNA 2008 tables), `iri`,
//!   `iri-reference` (RFC 3987's `ucschar` ranges and their interplay
//!   with IP literals are not covered yet),
//!   `regex` (ECMA-262 syntax nests parentheses: not regular). The
//!   compiler refuses them unless [`super::JsonSchemaOptions::lenient_formats`]
//!   is set, which treats them as annotations and records a warning.
//!
//! Other names (`int32`, `binary`, draft-3's `color` …) are no JSON Schema
//! format; validators ignore them, and so does the compiler (listed in the
//! [`super::CompileReport`]) unless [`super::UnknownFormats::Refuse`].

use std::sync::OnceLock;

/// How the compiler treats one `format` name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FormatKind {
    /// Enforced by this regex (exact, or the documented sound subset).
    Regex(&'static str),
    /// A specification format without an exact regex: refused unless
    /// lenient; the reason.
    Refused(&'static str),
    /// No format of the specification: an annotation.
    Unknown,
}

const DATE: &str = concat!(
    r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))",
    r"|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)"
);
const TIME: &str = concat!(
    r"(?:(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])",
    r"|23:59:60(?:\.[0-9]+)?(?:[Zz]|[+-]00:00))"
);
const DUR_TIME: &str = r"T(?:[0-9]+H(?:[0-9]+M(?:[0-9]+S)?)?|[0-9]+M(?:[0-9]+S)?|[0-9]+S)";
const H16: &str = "[0-9A-Fa-f]{1,4}";
const IPV4: &str = r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
/// RFC 3986 `pct-encoded`.
const PCT: &str = "%[0-9A-Fa-f]{2}";
/// RFC 3986 `unreserved` and `sub-delims` (inside a class).
const UNRES_SUB: &str = r"A-Za-z0-9\-._~!$&'()*+,;=";
/// RFC 5322 `atext` (inside a class).
const ATEXT: &str = r"A-Za-z0-9!#$%&'*+/=?^_`{|}~\-";

/// RFC 4291 §2.2: `x:x:x:x:x:x:x:x`, `::` compression, and an embedded
/// IPv4 address as the last 32 bits.
fn ipv6() -> String {
    let groups = |n: usize| -> String {
        if n == 0 {
            String::new()
        } else {
            format!("(?:{H16}:){{{}}}{H16}", n - 1)
        }
    };
    let mut alts = vec![
        format!("(?:{H16}:){{7}}{H16}"),
        format!("(?:{H16}:){{6}}{IPV4}"),
    ];
    for left in 0..=7usize {
        for right in 0..=(7 - left) {
            let r = if right == 0 {
                String::new()
            } else {
                format!("{H16}(?::{H16}){{{}}}", right - 1)
            };
            alts.push(format!("{}::{r}", groups(left)));
        }
    }
    for left in 0..=5usize {
        for right in 0..=(5 - left) {
            alts.push(format!("{}::(?:{H16}:){{{right}}}{IPV4}", groups(left)));
        }
    }
    format!("(?:{})", alts.join("|"))
}

/// An RFC 1123 label of 1–`max` characters without `--` in positions 3–4.
fn label(max: usize) -> String {
    let (ld, ldh) = ("[A-Za-z0-9]", r"[A-Za-z0-9\-]");
    format!(
        r"(?:{ld}(?:{ldh}{{0,2}}{ld})?|{ld}{ldh}(?:{ld}{ldh}|-{ld}){ldh}{{0,{}}}{ld})",
        max - 5
    )
}

/// The `hostname` subset (module docs): labels in tiers within 253
/// characters.
fn hostname() -> String {
    let tiers: Vec<String> = [(3usize, 63usize), (8, 30), (16, 14)]
        .iter()
        .map(|&(count, len)| {
            let l = label(len);
            format!(r"{l}(?:\.{l}){{0,{}}}", count - 1)
        })
        .collect();
    format!("(?:{})", tiers.join("|"))
}

/// RFC 3986 `URI` (`absolute`) or `URI-reference`.
fn uri(absolute: bool) -> String {
    let pchar = format!("(?:[{UNRES_SUB}:@]|{PCT})");
    let pchar_nc = format!("(?:[{UNRES_SUB}@]|{PCT})");
    let segment = format!("{pchar}*");
    let qf = format!("(?:[{UNRES_SUB}:@/?]|{PCT})*");
    let ip_literal = format!(r"\[(?:{}|v[0-9A-Fa-f]+\.[{UNRES_SUB}:]+)\]", ipv6());
    let host = format!("(?:{ip_literal}|(?:[{UNRES_SUB}]|{PCT})*)");
    let userinfo = format!("(?:[{UNRES_SUB}:]|{PCT})*");
    let authority = format!("(?:{userinfo}@)?{host}(?::[0-9]*)?");
    let abempty = format!("(?:/{segment})*");
    let absolute_path = format!("/(?:{pchar}+(?:/{segment})*)?");
    let rootless = format!("{pchar}+(?:/{segment})*");
    let noscheme = format!("{pchar_nc}+(?:/{segment})*");
    let tail = format!(r"(?:\?{qf})?(?:#{qf})?");
    let scheme = r"[A-Za-z][A-Za-z0-9+.\-]*";
    let full = format!("{scheme}:(?://{authority}{abempty}|{absolute_path}|{rootless}|){tail}");
    if absolute {
        full
    } else {
        let relative = format!("(?://{authority}{abempty}|{absolute_path}|{noscheme}|){tail}");
        format!("(?:{full}|{relative})")
    }
}

/// RFC 6570 §2 `URI-Template`: literals (`literals`, with `ucschar`,
/// `iprivate` and `pct-encoded`) and expressions `{` operator? varspec
/// (`,` varspec)* `}`, varspec = varname (`:` max-length | `*`)?.
fn uri_template() -> String {
    let pct = "%[0-9A-Fa-f]{2}";
    let ucschar = r"\x{A0}-\x{D7FF}\x{F900}-\x{FDCF}\x{FDF0}-\x{FFEF}\x{10000}-\x{1FFFD}\x{20000}-\x{2FFFD}\x{30000}-\x{3FFFD}\x{40000}-\x{4FFFD}\x{50000}-\x{5FFFD}\x{60000}-\x{6FFFD}\x{70000}-\x{7FFFD}\x{80000}-\x{8FFFD}\x{90000}-\x{9FFFD}\x{A0000}-\x{AFFFD}\x{B0000}-\x{BFFFD}\x{C0000}-\x{CFFFD}\x{D0000}-\x{DFFFD}\x{E1000}-\x{EFFFD}";
    let iprivate = r"\x{E000}-\x{F8FF}\x{F0000}-\x{FFFFD}\x{100000}-\x{10FFFD}";
    // RFC 6570 leaves `'` out of `literals` (the `jsonschema` crate, the
    // oracle of the tests, lets it in: there this is a sound subset)
    let literal = format!(r"(?:[!#$&(-;=?-\[\]_a-z~{ucschar}{iprivate}]|{pct})");
    let varchar = format!("(?:[A-Za-z0-9_]|{pct})");
    let varspec = format!(r"{varchar}(?:\.?{varchar})*(?::[1-9][0-9]{{0,3}}|\*)?");
    format!(r"(?:{literal}|\{{[+#./;?&=,!@|]?{varspec}(?:,{varspec})*\}})*")
}

/// `Quoted-string` of RFC 5321 §4.1.2 with at most 64 characters in all
/// (§4.5.3.1.1), quotes included: `"`, then up to 62 characters of units
/// — `qtextSMTP` (`%d32-33 / %d35-91 / %d93-126`, one character) or a
/// quoted pair (`\` and a visible character `%d33-126`, two) — then `"`.
/// Exact, and unambiguous (so that its automaton stays small): `L(n)`,
/// the unit sequences of at most `n` characters, is those shorter than
/// `s = ⌈n/2⌉`, or `E(s) L(n−s)` (a unit ends at `s`), or
/// `E(s−1) P L(n−s−1)` (a pair covers `s` and `s+1`), with `E(k)` the
/// sequences of exactly `k` characters, split at the middle the same way:
/// a regex of O(n²) size, not the exponential unfolding.
pub(crate) fn quoted_local_part() -> String {
    const Q: &str = r"[ !#-\[\]-~]";
    const P: &str = r"\\[!-~]";
    // E(n): exactly n characters
    fn e(n: usize, memo: &mut Vec<Option<String>>) -> String {
        if let Some(r) = &memo[n] {
            return r.clone();
        }
        let r = match n {
            0 => String::new(),
            1 => Q.to_string(),
            2 => format!("(?:{Q}{Q}|{P})"),
            n => {
                let (a, b) = (n.div_ceil(2), n / 2);
                let (x, y) = (e(a, memo), e(b, memo));
                let (u, v) = (e(a - 1, memo), e(b - 1, memo));
                format!("(?:{x}{y}|{u}{P}{v})")
            }
        };
        memo[n] = Some(r.clone());
        r
    }
    // L(n): at most n characters
    fn l(n: usize, em: &mut Vec<Option<String>>, lm: &mut Vec<Option<String>>) -> String {
        if let Some(r) = &lm[n] {
            return r.clone();
        }
        let r = match n {
            0 => String::new(),
            1 => format!("{Q}?"),
            2 => format!("(?:{Q}{{0,2}}|{P})"),
            n => {
                let s = n.div_ceil(2);
                let short = l(s - 1, em, lm);
                let (x, y) = (e(s, em), l(n - s, em, lm));
                let (u, v) = (e(s - 1, em), l(n - s - 1, em, lm));
                format!("(?:{short}|{x}{y}|{u}{P}{v})")
            }
        };
        lm[n] = Some(r.clone());
        r
    }
    let (mut em, mut lm) = (vec![None; 63], vec![None; 63]);
    format!("\"{}\"", l(62, &mut em, &mut lm))
}

/// How the compiler treats the format `name` (module docs).
pub(crate) fn lookup(name: &str) -> FormatKind {
    static TABLE: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let host = hostname();
        let atom = |n: usize| format!("[{ATEXT}]{{1,{n}}}");
        let local: Vec<String> = [(1usize, 64usize), (2, 31), (4, 15), (8, 7)]
            .iter()
            .map(|&(count, len)| format!(r"{}(?:\.{}){{0,{}}}", atom(len), atom(len), count - 1))
            .collect();
        let pointer = r"(?:/(?:[^/~]|~[01])*)*";
        vec![
            ("date", DATE.to_string()),
            ("time", TIME.to_string()),
            ("date-time", format!("{DATE}[Tt]{TIME}")),
            (
                "duration",
                format!(
                    "P(?:(?:[0-9]+Y(?:[0-9]+M(?:[0-9]+D)?)?|[0-9]+M(?:[0-9]+D)?|[0-9]+D)(?:{DUR_TIME})?|{DUR_TIME}|[0-9]+W)"
                ),
            ),
            (
                "uuid",
                "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}".into(),
            ),
            (
                "email",
                format!("(?:{}|{})@{host}", local.join("|"), quoted_local_part()),
            ),
            ("hostname", host),
            ("ipv4", IPV4.into()),
            ("ipv6", ipv6()),
            ("uri", uri(true)),
            ("uri-reference", uri(false)),
            ("json-pointer", pointer.into()),
            ("uri-template", uri_template()),
            (
                "relative-json-pointer",
                format!("(?:0|[1-9][0-9]*)(?:#|{pointer})"),
            ),
        ]
    });
    if let Some((_, r)) = table.iter().find(|(n, _)| *n == name) {
        return FormatKind::Regex(r.as_str());
    }
    match name {
        "idn-email" | "idn-hostname" => {
            FormatKind::Refused("IDNA 2008 label validity has no exact regex here")
        }
        "iri" | "iri-reference" => {
            FormatKind::Refused("RFC 3987 IRIs are not compiled exactly yet")
        }
        "regex" => FormatKind::Refused("ECMA-262 regex syntax is not a regular language"),
        _ => FormatKind::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_grammar::dfa::TerminalDfa;

    #[test]
    fn formats_accept_and_reject() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            (
                "date",
                &["2024-02-29", "2023-12-31", "2000-02-29"],
                &["2023-02-29", "1900-02-29", "2023-04-31", "23-01-01"],
            ),
            (
                "time",
                &["12:30:00Z", "23:59:59.123+05:30"],
                &["24:00:00Z", "12:30:00", "12:60:00Z"],
            ),
            (
                "date-time",
                &["2020-01-01T00:00:00Z", "2020-01-01t10:00:00.5-01:00"],
                &["2020-01-01 00:00:00Z"],
            ),
            (
                "uuid",
                &["123e4567-e89b-12d3-a456-426614174000"],
                &["123e4567e89b12d3a456426614174000"],
            ),
            (
                "email",
                &["a.b+c@example.com", "x@localhost"],
                &["a@", "@b.com", "a..b@c.d", "a b@c.d"],
            ),
            (
                "ipv4",
                &["192.168.0.1", "0.0.0.0"],
                &["256.1.1.1", "01.1.1.1", "1.1.1"],
            ),
            (
                "ipv6",
                &["::1", "2001:db8::ff00:42:8329", "1:2:3:4:5:6:7:8", "::"],
                &["1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "::1.2.3.04"],
            ),
            (
                "uri",
                &["https://example.com/a?b=c#d", "urn:isbn:123"],
                &["no scheme", "/relative"],
            ),
            (
                "hostname",
                &["example.com", "a-b.c"],
                &["-a.com", "a..b", "ab--c.com"],
            ),
            (
                "uri-reference",
                &["", "a/b:c", "//host:80/p?q#f", "#frag", "./a:b"],
                &["://", "a:b:c d", "%zz", "[::1]"],
            ),
            (
                "duration",
                &["P1Y", "P1Y2M3DT4H5M6S", "PT1M", "P2W", "P1M1D"],
                &["P", "PT", "P1Y1D", "P1W1D", "PT1H1S", "P1D1M"],
            ),
            ("json-pointer", &["", "/a~0b/~1", "/"], &["a", "/~2"]),
            (
                "uri-template",
                &[
                    "",
                    "http://example.com/{id}",
                    "/s{?q,lang}",
                    "{+path:6}/x{#frag*}",
                    "a%20b{x.y}",
                ],
                &[
                    "{}",
                    "{a",
                    "a}",
                    "{a b}",
                    "{?}",
                    "%zz",
                    "{x:0}",
                    "{x:12345}",
                    "a b",
                ],
            ),
            (
                "relative-json-pointer",
                &["0", "1/a", "10#"],
                &["01", "-1", "/a"],
            ),
        ];
        for (name, good, bad) in cases {
            let FormatKind::Regex(r) = lookup(name) else {
                panic!("{name} not enforced")
            };
            let d = TerminalDfa::regex(r).unwrap();
            for g in *good {
                assert!(d.matches(g.as_bytes()), "{name} should accept {g}");
            }
            for b in *bad {
                assert!(!d.matches(b.as_bytes()), "{name} should reject {b}");
            }
        }
        assert_eq!(lookup("topic"), FormatKind::Unknown);
        assert!(matches!(lookup("regex"), FormatKind::Refused(_)));
    }
}
