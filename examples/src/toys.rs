//! Experiment data: the finite canonical-JSON languages of the
//! future-validity paper's Table 7 (schemas A–D: 3, 4, 18 and 24 strings)
//! and the 2,000-string flag-code schema E of Tables 14–16, plus the corpus
//! the byte bigram LM ([`zapspec_testkit::bytelm::CharBigramLm`]) is fitted
//! on.

/// One finite canonical-JSON language.
#[derive(Debug, Clone)]
pub struct FiniteSchema {
    /// Short label ("status (A)", …).
    pub name: &'static str,
    /// The canonical (compact) JSON strings, in a fixed order.
    pub strings: Vec<String>,
}

/// The finite JSON languages of Table 7 (A–D: 3, 4, 18, 24 strings) and,
/// with `with_flag_code`, schema E of Tables 14–16 (2,000 strings).
pub fn json_schemas(with_flag_code: bool) -> Vec<FiniteSchema> {
    let mut out = vec![
        FiniteSchema {
            name: "status (A)",
            strings: ["ok", "error", "pending"]
                .iter()
                .map(|s| format!("{{\"status\":\"{s}\"}}"))
                .collect(),
        },
        FiniteSchema {
            name: "type-value (B)",
            strings: ["a", "b"]
                .iter()
                .flat_map(|t| {
                    ["x", "y"]
                        .iter()
                        .map(move |v| format!("{{\"type\":\"{t}\",\"value\":\"{v}\"}}"))
                })
                .collect(),
        },
        FiniteSchema {
            name: "action-target (C)",
            strings: ["create", "read", "update", "delete", "list", "sync"]
                .iter()
                .flat_map(|a| {
                    ["user", "file", "task"]
                        .iter()
                        .map(move |t| format!("{{\"action\":\"{a}\",\"target\":\"{t}\"}}"))
                })
                .collect(),
        },
        FiniteSchema {
            name: "method-path (D)",
            strings: ["GET", "POST", "PUT", "DELETE"]
                .iter()
                .flat_map(|m| {
                    [
                        "/api/v1",
                        "/api/v2",
                        "/metrics/v1",
                        "/health",
                        "/users",
                        "/orders",
                    ]
                    .iter()
                    .map(move |p| format!("{{\"method\":\"{m}\",\"path\":\"{p}\"}}"))
                })
                .collect(),
        },
    ];
    if with_flag_code {
        out.push(FiniteSchema {
            name: "flag-code (E)",
            strings: ["true", "false"]
                .iter()
                .flat_map(|f| {
                    (0..1000).map(move |c| format!("{{\"flag\":{f},\"code\":\"{c:03}\"}}"))
                })
                .collect(),
        });
    }
    out
}

/// The corpus the JSON byte LM is fitted on: every schema string of A–E once
/// plus a few generic JSON lines, so the bigram is JSON-shaped but does not
/// know any schema's structure beyond one character of context.
pub fn json_corpus() -> Vec<String> {
    let mut c: Vec<String> = json_schemas(true)
        .into_iter()
        .flat_map(|s| s.strings.into_iter().step_by(7))
        .collect();
    c.extend(
        [
            r#"{"id":1,"name":"alice","tags":["a","b"]}"#,
            r#"{"error":{"code":404,"message":"not found"}}"#,
            r#"{"ok":true,"data":[1,2,3],"next":null}"#,
            r#"{"user":"bob","role":"admin","active":false}"#,
            r#"{"path":"/api/v1/items","method":"POST","status":201}"#,
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use zapspec_core::prob::softmax;
    use zapspec_core::LanguageModel;
    use zapspec_testkit::bytelm::{CharBigramLm, NoisyLm};

    #[test]
    fn schema_sizes_match_the_paper() {
        let sizes: Vec<usize> = json_schemas(true).iter().map(|s| s.strings.len()).collect();
        assert_eq!(sizes, vec![3, 4, 18, 24, 2000]);
        for s in json_schemas(true) {
            let mut u = s.strings.clone();
            u.sort();
            u.dedup();
            assert_eq!(u.len(), s.strings.len(), "{} has duplicates", s.name);
        }
    }

    #[test]
    fn noisy_lm_is_deterministic_and_close() {
        let base = CharBigramLm::fit(&json_corpus(), 0.1, 1.0);
        let mut a = NoisyLm::new(base.clone(), 0.3, 7);
        let mut b = NoisyLm::new(base.clone(), 0.3, 7);
        let la = a.logits_for(&[b'{' as u32]).unwrap();
        assert_eq!(la, b.logits_for(&[b'{' as u32]).unwrap());
        let mut c = base;
        let lc = c.logits_for(&[b'{' as u32]).unwrap();
        let tv = zapspec_core::prob::tv(&softmax(&la), &softmax(&lc));
        assert!(tv > 0.0 && tv < 0.3, "tv {tv}");
    }
}
