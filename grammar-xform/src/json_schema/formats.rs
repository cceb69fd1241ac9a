//! `format` as regexes over the decoded string (regex-syntax dialect,
//! full match). Each is a *subset* of the format's RFC syntax that keeps
//! the common spellings, so a generated string is always valid:
//!
//! - `date` (RFC 3339 `full-date`, with month lengths and leap years),
//!   `time` (`full-time`, seconds 00–59, optional fraction, `Z` or
//!   offset), `date-time` (`date` `T` `time`, `T`/`t` and `Z`/`z`);
//! - `uuid` (RFC 4122 hex form), `email` (dot-atom local part, DNS domain),
//!   `hostname` (RFC 1123 labels), `ipv4` (dotted quad without leading
//!   zeros), `ipv6` (RFC 4291 text forms without embedded IPv4);
//! - `uri` (scheme `:` then RFC 3986 characters or %-escapes),
//!   `uri-reference` (RFC 3986 characters or %-escapes).
//!
//! Other format names are annotations (JSON Schema 2019+: `format` is an
//! annotation unless a validator opts in) and are reported, not enforced.

const DATE: &str = concat!(
    r"(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))",
    r"|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)"
);
const TIME: &str = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
const H16: &str = "[0-9A-Fa-f]{1,4}";
const URI_CHAR: &str = r"(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})";
const LABEL: &str = r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?";

/// The regex of a known format, or `None` for an annotation-only format.
pub(crate) fn format_regex(name: &str) -> Option<&'static str> {
    use std::sync::OnceLock;
    static TABLE: OnceLock<Vec<(&'static str, String)>> = OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let ipv6 = {
            // RFC 4291 §2.2 forms 1 and 2 (`::` compression), no embedded IPv4.
            let mut alts = vec![format!("(?:{H16}:){{7}}{H16}")];
            for left in 0..=7usize {
                for right in 0..=(7 - left) {
                    let l = if left == 0 {
                        String::new()
                    } else {
                        format!("(?:{H16}:){{{}}}{H16}", left - 1)
                    };
                    let r = if right == 0 {
                        String::new()
                    } else {
                        format!("{H16}(?::{H16}){{{}}}", right - 1)
                    };
                    alts.push(format!("{l}::{r}"));
                }
            }
            format!("(?:{})", alts.join("|"))
        };
        vec![
            ("date", DATE.to_string()),
            ("time", TIME.to_string()),
            ("date-time", format!("{DATE}[Tt]{TIME}")),
            (
                "uuid",
                "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}".into(),
            ),
            (
                "email",
                format!(
                    r"[A-Za-z0-9!#$%&'*+/=?^_`{{|}}~\-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{{|}}~\-]+)*@{LABEL}(?:\.{LABEL})*"
                ),
            ),
            ("hostname", format!(r"{LABEL}(?:\.{LABEL})*")),
            (
                "ipv4",
                r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
                    .into(),
            ),
            ("ipv6", ipv6),
            ("uri", format!(r"[A-Za-z][A-Za-z0-9+.\-]*:{URI_CHAR}*")),
            ("uri-reference", format!(r"{URI_CHAR}*")),
        ]
    });
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, r)| r.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dfa::TerminalDfa;

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
                &["1:2:3:4:5:6:7:8:9", "1::2::3", "12345::"],
            ),
            (
                "uri",
                &["https://example.com/a?b=c#d", "urn:isbn:123"],
                &["no scheme", "/relative"],
            ),
            ("hostname", &["example.com", "a-b.c"], &["-a.com", "a..b"]),
        ];
        for (name, good, bad) in cases {
            let d = TerminalDfa::regex(format_regex(name).unwrap()).unwrap();
            for g in *good {
                assert!(d.matches(g.as_bytes()), "{name} should accept {g}");
            }
            for b in *bad {
                assert!(!d.matches(b.as_bytes()), "{name} should reject {b}");
            }
        }
        assert!(format_regex("topic").is_none());
    }
}
