//! The reference recognizer on a real-sized input: llama.cpp's JSON grammar
//! and a few-KB JSON document, before and after the §4.5 pipeline.

use std::time::Instant;

use zapspec_grammar::{simplify, Grammar, Recognizer, SimplifyConfig};

const JSON_GBNF: &str = r#"
root   ::= value
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" ( ["\\bfnrt/] | "u" [0-9a-fA-F]{4} ) )* "\""
number ::= "-"? ( [0-9] | [1-9] [0-9]{1,15} ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= [ \t\n]*
"#;

/// A deterministic JSON document of roughly `target` bytes.
fn document(target: usize) -> String {
    let mut out = String::from("{\n");
    let mut i = 0;
    while out.len() < target {
        if i > 0 {
            out.push_str(",\n");
        }
        out.push_str(&format!(
            "  \"key{i}\": {{\"id\": {i}, \"name\": \"item \\\"{i}\\\" é\\u00e9\", \"tags\": [\"a\", \"b\", {}], \"ok\": {}, \"x\": -{i}.5e+3, \"nested\": [[], {{}}, [null]]}}",
            i * 7,
            i % 2 == 0
        ));
        i += 1;
    }
    out.push_str("\n}");
    out
}

#[test]
fn json_document_of_a_few_kb() {
    let g = Grammar::from_gbnf(JSON_GBNF).unwrap();
    let simplified = simplify(&g, &SimplifyConfig::default()).unwrap().grammar;
    let doc = document(4096);
    let mut bad = doc.clone();
    bad.insert(doc.len() / 2, ']');
    for (name, gr) in [("parsed", &g), ("simplified", &simplified)] {
        let t = Instant::now();
        let r = Recognizer::new(gr).unwrap();
        let compile = t.elapsed();
        let t = Instant::now();
        assert!(r.recognizes(doc.as_bytes()), "{name}");
        let accept = t.elapsed();
        assert!(!r.recognizes(bad.as_bytes()), "{name}");
        assert!(r.is_viable_prefix(&doc.as_bytes()[..doc.len() / 2]));
        assert!(!r.is_viable_prefix(&bad.as_bytes()[..doc.len() / 2 + 1]));
        println!(
            "{name}: {} rules, {} bytes: compile {:.1} ms, recognize {:.1} ms",
            gr.rules.len(),
            doc.len(),
            compile.as_secs_f64() * 1e3,
            accept.as_secs_f64() * 1e3
        );
    }
}
