//! Snapshots of the seed grammars through the §4.5 pipeline, pass by pass,
//! with membership checked against the reference recognizer.

use zapspec_grammar::{simplify, Grammar, Recognizer, SimplifyConfig};

/// `A → AB | B; B → a` (left recursion plus a unit rule), start `A`.
const LEFT_REC: &str = "A ::= A B | B\nB ::= \"a\"\n";

/// ZapFormat Fig. 1: `S → A + B, A → a | c, B → b | d`.
const PAPER_FIG1: &str = "S ::= A \"+\" B\nA ::= \"a\" | \"c\"\nB ::= \"b\" | \"d\"\n";

/// ZapFormat §3.1: `Expression → Expression + Term | Term`, completed
/// with terms and factors.
const PAPER_EXPR: &str = "Expression ::= Expression \"+\" Term | Term\nTerm ::= Term \"*\" Factor | Factor\nFactor ::= \"(\" Expression \")\" | [0-9]+\n";

/// ZapFormat §3.3: `JSON → "{" PairList "}"`, where the pair list may be
/// empty (so after `{` both `"` and `}` are valid), completed into a small
/// JSON-object grammar with a nullable list, unit rules and an unused rule.
const PAPER_JSON: &str = r#"JSON ::= "{" PairList "}"
PairList ::= "" | Pairs
Pairs ::= Pair | Pairs "," Pair
Pair ::= String ":" Value
Value ::= String | Number | JSON
String ::= "\"" Chars "\""
Chars ::= "" | Chars Char
Char ::= [^"\\]
Number ::= "-"? [0-9]+
Unused ::= "never" Value
"#;

fn report(src: &str) -> (Grammar, String) {
    let parsed = zapspec_grammar::parse_gbnf(src).unwrap();
    let s = simplify(&parsed.grammar, &SimplifyConfig::default()).unwrap();
    let mut out = format!("# input\n{}", parsed.grammar);
    for w in &parsed.warnings {
        out.push_str(&format!("# warning: {w}\n"));
    }
    for p in &s.passes {
        out.push_str(&format!("\n# after {}\n{}", p.pass, p.grammar));
    }
    out.push('\n');
    out.push_str(&s.stats_table());
    (s.grammar, out)
}

fn same_membership(a: &Grammar, b: &Grammar, words: &[&str]) {
    let (ra, rb) = (Recognizer::new(a).unwrap(), Recognizer::new(b).unwrap());
    for w in words {
        assert_eq!(
            ra.recognizes(w.as_bytes()),
            rb.recognizes(w.as_bytes()),
            "{w:?}\n{a}\n{b}"
        );
    }
}

#[test]
fn left_recursion_seed() {
    let (g, out) = report(LEFT_REC);
    insta::assert_snapshot!("left_recursion", out);
    let orig = Grammar::from_gbnf(LEFT_REC).unwrap();
    same_membership(&orig, &g, &["", "a", "aa", "aaaaa", "b", "ab"]);
}

#[test]
fn paper_fig1_seed() {
    let (g, out) = report(PAPER_FIG1);
    insta::assert_snapshot!("paper_fig1", out);
    let orig = Grammar::from_gbnf(PAPER_FIG1).unwrap();
    same_membership(
        &orig,
        &g,
        &["a+b", "a+d", "c+b", "c+d", "a+", "b+a", "a+bd", ""],
    );
}

#[test]
fn paper_expression_seed() {
    let (g, out) = report(PAPER_EXPR);
    insta::assert_snapshot!("paper_expression", out);
    let orig = Grammar::from_gbnf(PAPER_EXPR).unwrap();
    same_membership(
        &orig,
        &g,
        &[
            "1",
            "1+2*3",
            "(1+2)*34",
            "((7))",
            "1+",
            "()",
            "1*(2+3)*4+5",
            "",
        ],
    );
}

#[test]
fn paper_json_seed() {
    let (g, out) = report(PAPER_JSON);
    insta::assert_snapshot!("paper_json", out);
    let orig = Grammar::from_gbnf(PAPER_JSON).unwrap();
    same_membership(
        &orig,
        &g,
        &[
            "{}",
            r#"{"a":1}"#,
            r#"{"a":-12,"b":{"":{}}}"#,
            r#"{"a":1,}"#,
            r#"{,"a":1}"#,
            r#"{"a"}"#,
            "{",
            "",
            r#"{"x":"y","z":{"w":"v"}}"#,
        ],
    );
}
