//! README's first Rust snippet, verbatim (`tests/readme.rs` checks that).
use zapspec::{Message, Model, PromptLookup};

fn main() -> Result<(), zapspec::Error> {
    // scripts/fetch-smollm2.sh puts SmolLM2-135M-Instruct (98 MB) here
    let model = Model::load("models/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")?;
    let schema = r#"{"type": "object", "additionalProperties": false,
        "properties": {"title": {"type": "string"}, "day": {"type": "string", "format": "date"},
                       "online": {"type": "boolean"}},
        "required": ["title", "day", "online"]}"#;
    let mut pipe = model
        .builder(model.json_schema_str(schema)?) // the schema's Earley matcher
        .drafter(PromptLookup::default()) // or NoDraft, CopyDraft, a draft model
        .greedy() // or .temperature(0.7).seed(1)
        .max_tokens(200)
        .build()?; // built once, called per prompt
    let out = pipe.generate_chat(&[Message::user(
        "The team's quarterly review is on 2026-12-03, online. Describe it as JSON.",
    )])?;
    println!("{}", out.text);
    println!(
        "{:?} after {} tokens, {} target calls",
        out.stop,
        out.tokens.len(),
        out.stats.target_calls
    );
    // the same pipeline again, streaming the text as it is decided
    pipe.generate_stream("A kickoff meeting on 2027-01-11 in JSON: ", |piece| {
        print!("{piece}")
    })?;
    println!();
    Ok(())
}
