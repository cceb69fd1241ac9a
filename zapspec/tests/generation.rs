//! The facade's `Generation`: every stop reason, text out, streaming, stop
//! strings and prompts, on toy models over the byte vocabulary.

use std::sync::Arc;

use zapspec::{Builder, Error, Prompt, StopReason, TokenVocab, Tokenizer, Unconstrained};
use zapspec_testkit::bytelm::CharBigramLm;
use zapspec_testkit::bytelm::BYTE_EOS;
use zapspec_testkit::toy::ClosureLm;

fn bytes() -> Arc<TokenVocab> {
    Arc::new(TokenVocab::bytes())
}

fn tok() -> Tokenizer {
    Tokenizer::new(bytes())
}

/// A bigram that has seen only `text` (EOS after it), sharpened so greedy
/// decoding follows it.
fn parrot(text: &str) -> CharBigramLm {
    CharBigramLm::fit(&[text], 0.01, 0.5)
}

#[test]
fn eos_chosen_by_the_model() {
    let mut p = Builder::new(parrot("world"), Unconstrained::new(257, BYTE_EOS))
        .tokenizer(tok())
        .greedy()
        .build()
        .unwrap();
    let out = p.generate(Prompt::default()).unwrap();
    assert_eq!(out.text, "world");
    assert_eq!(
        out.tokens,
        b"world".iter().map(|&b| b as u32).collect::<Vec<_>>()
    );
    assert_eq!(out.stop, StopReason::Eos);
    assert!(out.stop.is_complete());
}

#[test]
fn constraint_finished_when_only_eos_is_left() {
    // the model would go on ("abab…"), the grammar allows "ab" and then EOS only
    let g = zapspec::gbnf(bytes(), r#"root ::= "ab""#).unwrap();
    let mut p = Builder::new(parrot("ababababab"), g)
        .tokenizer(tok())
        .greedy()
        .build()
        .unwrap();
    let out = p.generate(Prompt::default()).unwrap();
    assert_eq!(out.text, "ab");
    assert_eq!(out.stop, StopReason::ConstraintFinished);
    // a grammar that also allows more: the model's EOS is its own choice
    let g = zapspec::gbnf(bytes(), r#"root ::= "ab" "c"?"#).unwrap();
    let mut p = Builder::new(parrot("ab"), g)
        .tokenizer(tok())
        .greedy()
        .build()
        .unwrap();
    let out = p.generate(Prompt::default()).unwrap();
    assert_eq!((out.text.as_str(), &out.stop), ("ab", &StopReason::Eos));
}

#[test]
fn max_tokens_keeps_the_output() {
    let g = zapspec::gbnf(bytes(), r#"root ::= "a"+"#).unwrap();
    for gamma in [1, 3, 8] {
        let mut p = Builder::new(parrot("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"), g.clone())
            .drafter(zapspec::PromptLookup::default())
            .tokenizer(tok())
            .gamma(gamma)
            .max_tokens(5)
            .greedy()
            .build()
            .unwrap();
        // the prompt gives prompt lookup something to copy: rounds overshoot the cap
        let out = p.generate(&[97u32; 12]).unwrap();
        assert_eq!(out.stop, StopReason::MaxTokens, "gamma {gamma}");
        assert_eq!(out.text, "aaaaa");
        assert_eq!(out.tokens.len(), 5);
        // per round: what was forced by the grammar (the first `a`: the
        // grammar allows nothing else), drafted and kept; the rounds add up
        assert_eq!(out.rounds.len(), out.stats.rounds);
        let accepted: usize = out.rounds.iter().map(|r| r.accepted).sum();
        assert_eq!(accepted, out.stats.accepted);
        let forced: usize = out.rounds.iter().map(|r| r.forced.len()).sum();
        assert_eq!(forced, out.stats.forced);
        let emitted: usize = out
            .rounds
            .iter()
            .map(|r| r.forced.len() + r.accepted + usize::from(r.extra.is_some()))
            .sum();
        assert!(emitted >= 5);
    }
}

#[test]
fn stop_strings_cut_text_and_tokens() {
    let mut p = Builder::new(parrot("abcabcabcabc"), Unconstrained::new(257, BYTE_EOS))
        .tokenizer(tok())
        .stop(["zz", "ca"])
        .greedy()
        .build()
        .unwrap();
    let mut pieces = Vec::new();
    let out = p
        .generate_stream(Prompt::default(), |s| pieces.push(s.to_string()))
        .unwrap();
    assert_eq!(out.stop, StopReason::StopString("ca".into()));
    assert_eq!(out.text, "ab");
    // through the token that completed the stop string
    assert_eq!(
        out.tokens,
        b"abca".iter().map(|&b| b as u32).collect::<Vec<_>>()
    );
    assert_eq!(pieces.concat(), out.text);
    assert!(pieces.iter().all(|s| !s.contains('c')), "{pieces:?}");
}

#[test]
fn streaming_never_splits_a_character() {
    let text = "é→é→é";
    let mut p = Builder::new(parrot(text), Unconstrained::new(257, BYTE_EOS))
        .tokenizer(tok())
        .greedy()
        .max_tokens(text.len())
        .build()
        .unwrap();
    let mut pieces = Vec::new();
    let out = p
        .generate_stream(Prompt::default(), |s| pieces.push(s.to_string()))
        .unwrap();
    assert_eq!(out.text.as_bytes(), &text.as_bytes()[..out.tokens.len()]);
    assert_eq!(pieces.concat(), out.text);
    // one byte per round without a drafter: pieces are whole characters
    assert!(pieces.iter().all(|s| s.chars().count() == 1), "{pieces:?}");
}

#[test]
fn invalid_utf8_is_replaced_as_from_utf8_lossy_does() {
    // a model that writes a lone continuation byte, then "x", then EOS
    let script = [0x80, u32::from(b'x'), BYTE_EOS];
    let model = ClosureLm::new(257, move |ctx: &[u32]| {
        let mut l = vec![0.0f32; 257];
        l[script[ctx.len().min(2)] as usize] = 10.0;
        l
    });
    let mut p = Builder::new(model, Unconstrained::new(257, BYTE_EOS))
        .tokenizer(tok())
        .greedy()
        .build()
        .unwrap();
    let mut pieces = Vec::new();
    let out = p
        .generate_stream(Prompt::default(), |s| pieces.push(s.to_string()))
        .unwrap();
    assert_eq!(out.tokens, vec![0x80, b'x' as u32]);
    assert_eq!(out.text, String::from_utf8_lossy(&[0x80, b'x']));
    assert_eq!(pieces.concat(), out.text);
}

#[test]
fn prompts_condition_the_model_and_are_reused() {
    let model = CharBigramLm::fit(&["xq", "yr"], 0.01, 0.3);
    let mut p = Builder::new(model, Unconstrained::new(257, BYTE_EOS))
        .tokenizer(tok())
        .greedy()
        .max_tokens(1)
        .build()
        .unwrap();
    // one pipeline, many prompts: each generation sees its own
    assert_eq!(p.generate("x").unwrap().text, "q");
    assert_eq!(p.generate("y").unwrap().text, "r");
    assert_eq!(p.generate(&[b'x' as u32]).unwrap().text, "q");
    assert_eq!(p.generate(String::from("y")).unwrap().text, "r");
}

#[test]
fn text_prompts_need_a_tokenizer_and_chat_needs_a_template() {
    let mut p = Builder::new(parrot("a"), Unconstrained::new(257, BYTE_EOS))
        .greedy()
        .build()
        .unwrap();
    // no tokenizer: tokens and the empty prompt work, text is empty
    let out = p.generate(Prompt::default()).unwrap();
    assert_eq!(
        (out.tokens.as_slice(), out.text.as_str()),
        (&[97u32][..], "")
    );
    assert!(matches!(p.generate("a"), Err(Error::Config(_))));
    assert!(matches!(
        p.generate_stream(Prompt::default(), |_| {}),
        Err(Error::Config(_))
    ));
    let mut p = Builder::new(parrot("a"), Unconstrained::new(257, BYTE_EOS))
        .tokenizer(tok())
        .build()
        .unwrap();
    assert!(matches!(
        p.generate_chat(&[zapspec::Message::user("hi")]),
        Err(Error::Config(_))
    ));
    // stop strings without a tokenizer, or empty, are refused at build
    let b = Builder::new(parrot("a"), Unconstrained::new(257, BYTE_EOS));
    assert!(matches!(
        b.clone().stop(["x"]).build(),
        Err(Error::Config(_))
    ));
    assert!(matches!(
        b.tokenizer(tok()).stop([""]).build(),
        Err(Error::Config(_))
    ));
}

#[test]
fn bad_schema_text_is_a_positioned_error() {
    let e = zapspec::json_schema_str(bytes(), "{\"type\": \n  \"object\",,}").unwrap_err();
    assert!(matches!(e, Error::Json { line: 2, .. }), "{e:?}");
}

/// A model that writes `script` (bytes), then EOS.
fn scripted(script: Vec<u8>) -> ClosureLm<impl Fn(&[u32]) -> Vec<f32> + Clone> {
    ClosureLm::new(257, move |ctx: &[u32]| {
        let mut l = vec![0.0f32; 257];
        let next = script.get(ctx.len()).map_or(BYTE_EOS, |&b| u32::from(b));
        l[next as usize] = 10.0;
        l
    })
}

/// The text `bytes` have settled to: lossy UTF-8 less an unfinished
/// character at the end (later bytes may still complete it).
fn settled(bytes: &[u8]) -> String {
    let mut end = bytes.len();
    for back in 1..=3.min(bytes.len()) {
        if let Err(e) = std::str::from_utf8(&bytes[bytes.len() - back..]) {
            if e.error_len().is_none() && e.valid_up_to() == 0 {
                end = bytes.len() - back;
            }
        }
    }
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Against `String::from_utf8_lossy` of the whole output: the text is
    /// the lossy text cut at the first stop string, the streamed pieces
    /// concatenate to it, and the tokens end with the one completing it.
    #[test]
    fn text_and_stream_match_a_lossy_decode_of_the_whole(
        script in proptest::collection::vec(proptest::prop_oneof![
            proptest::prelude::any::<u8>(),
            proptest::sample::select(b"ab\xc3\xa9\xe2\x86\x92".to_vec()),
        ], 0..40),
        stop in proptest::option::of(proptest::sample::select(vec!["a", "ba", "é", "→a", "\u{fffd}"])),
        gamma in 1usize..5,
    ) {
        let stops: Vec<&str> = stop.into_iter().collect();
        let mut p = Builder::new(scripted(script.clone()), Unconstrained::new(257, BYTE_EOS))
            .drafter(zapspec::PromptLookup::default())
            .gamma(gamma)
            .tokenizer(tok())
            .stop(stops.clone())
            .greedy()
            .build()
            .unwrap();
        let mut pieces = String::new();
        let out = p.generate_stream(Prompt::default(), |s| pieces.push_str(s)).unwrap();
        let full = String::from_utf8_lossy(&script).into_owned();
        let first = stops.first().and_then(|s| full.find(s).map(|i| (i, *s)));
        match first {
            Some((i, s)) => {
                proptest::prop_assert_eq!(&out.text, &full[..i]);
                proptest::prop_assert_eq!(&out.stop, &StopReason::StopString(s.into()));
                // the end of the output settles an unfinished character
                let kept = if out.tokens.len() == script.len() {
                    full.clone()
                } else {
                    settled(&script[..out.tokens.len()])
                };
                let shorter = settled(&script[..out.tokens.len() - 1]);
                proptest::prop_assert!(kept.contains(s) && !shorter.contains(s));
            }
            None => {
                proptest::prop_assert_eq!(&out.text, &full);
                proptest::prop_assert_eq!(&out.stop, &StopReason::Eos);
                proptest::prop_assert_eq!(out.tokens.len(), script.len());
            }
        }
        proptest::prop_assert_eq!(pieces, out.text);
    }
}
