//! Spiffy's output equals vanilla decoding's on a deterministic toy whose
//! draft marginals equal those of a separate call (so App. A.1 applies
//! exactly), over random prompts, block sizes, unmasking rules,
//! temperatures, graphs and budgets; every accepted chain is a
//! parent→child path.

use proptest::prelude::*;
use zapspec_core::TokenId;
use zapspec_spiffy::calibrate::{calibrate, record_trajectory, CalibrationConfig};
use zapspec_spiffy::{
    generate, generate_spiffy, DecodeConfig, DraftFormula, DraftGraph, DraftNode, SpiffyConfig,
    Unmasking,
};
use zapspec_testkit::toy::ToyDiffusion;

const V: usize = 12;
const MASK: TokenId = 11;

fn toy(seed: u64, scale: f32) -> ToyDiffusion {
    ToyDiffusion::new(V, MASK, seed).with_scale(scale)
}

/// Random formulas over small ranks, with a random subset of the
/// strict-subset edges.
fn arb_graph() -> impl Strategy<Value = DraftGraph> {
    (
        prop::collection::vec(
            (prop::collection::btree_map(1u32..7, 1u32..3, 1..5), 1u32..5),
            0..10,
        ),
        prop::collection::vec(any::<bool>(), 100),
    )
        .prop_map(|(raw, keep)| {
            let mut nodes: Vec<DraftNode> = Vec::new();
            for (m, level) in raw {
                let Ok(formula) = DraftFormula::new(m) else {
                    continue;
                };
                if nodes.iter().all(|n| n.formula != formula) {
                    nodes.push(DraftNode {
                        formula,
                        level,
                        count: 0,
                    });
                }
            }
            let mut edges = Vec::new();
            let mut k = 0;
            for a in 0..nodes.len() {
                for b in 0..nodes.len() {
                    if nodes[a].formula.is_strict_subset(&nodes[b].formula) {
                        if keep[k % keep.len()] {
                            edges.push((a, b));
                        }
                        k += 1;
                    }
                }
            }
            DraftGraph::new(nodes, edges).expect("subset edges are valid")
        })
}

fn arb_decode() -> impl Strategy<Value = DecodeConfig> {
    (
        0usize..20,
        1usize..9,
        prop_oneof![
            (1usize..4).prop_map(|per_step| Unmasking::Static { per_step }),
            (0.2f64..0.95).prop_map(|tau| Unmasking::Threshold { tau }),
        ],
        prop_oneof![Just(0.0), 0.3f64..1.5],
        any::<u64>(),
    )
        .prop_map(
            |(gen_len, block_len, unmasking, temperature, seed)| DecodeConfig {
                gen_len,
                block_len,
                unmasking,
                temperature,
                seed,
            },
        )
}

fn check(
    model_seed: u64,
    scale: f32,
    prompt: &[TokenId],
    decode: DecodeConfig,
    graph: &DraftGraph,
    budget: usize,
) -> Result<(), TestCaseError> {
    let mut m = toy(model_seed, scale);
    let vanilla = generate(&mut m, prompt, &decode).unwrap();
    let mut m2 = toy(model_seed, scale);
    let cfg = SpiffyConfig {
        decode,
        draft_budget: budget,
        record_chains: true,
        timing: false,
    };
    let sp = generate_spiffy(&mut m2, prompt, graph, &cfg).unwrap();
    prop_assert_eq!(&sp.output.tokens, &vanilla.tokens);
    prop_assert_eq!(sp.output.steps, vanilla.steps);
    prop_assert_eq!(sp.output.nfe + sp.stats.accepted, vanilla.nfe);
    prop_assert_eq!(sp.output.nfe, sp.stats.calls);
    prop_assert!(sp.stats.drafts_sent <= budget * sp.stats.calls);
    for chain in &sp.stats.chains {
        for w in chain.windows(2) {
            prop_assert!(
                graph.has_edge(w[0], w[1]),
                "chain {:?} is not a path",
                chain
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn spiffy_equals_vanilla_random_graphs(
        model_seed in any::<u64>(),
        scale in 0.5f32..8.0,
        prompt in prop::collection::vec(0u32..11, 0..6),
        decode in arb_decode(),
        graph in arb_graph(),
        budget in 0usize..6,
    ) {
        check(model_seed, scale, &prompt, decode, &graph, budget)?;
    }

    #[test]
    fn spiffy_equals_vanilla_chain_and_calibrated_graphs(
        model_seed in any::<u64>(),
        scale in 2.0f32..10.0,
        prompt in prop::collection::vec(0u32..11, 0..6),
        decode in arb_decode(),
        budget in 0usize..6,
        calibrated in any::<bool>(),
    ) {
        let graph = if calibrated {
            let mut m = toy(model_seed, scale);
            let mut records = Vec::new();
            for p in 0..3u32 {
                let t = record_trajectory(&mut m, &[p, p + 1], &decode, 4).unwrap();
                records.extend(t.records);
            }
            calibrate(&records, &CalibrationConfig { lookahead: 4, budget: 6, ..Default::default() })
                .unwrap()
                .graph
        } else {
            DraftGraph::top1_chain(5)
        };
        check(model_seed, scale, &prompt, decode, &graph, budget)?;
    }
}

/// On a confident toy, the calibrated graph is accepted often: the
/// equality above is not vacuous.
#[test]
fn calibrated_graph_saves_calls() {
    let decode = DecodeConfig {
        gen_len: 32,
        block_len: 16,
        ..DecodeConfig::default()
    };
    let mut m = toy(7, 6.0);
    let mut records = Vec::new();
    for p in 0..6u32 {
        records.extend(
            record_trajectory(&mut m, &[p, 3], &decode, 6)
                .unwrap()
                .records,
        );
    }
    let cal = calibrate(&records, &CalibrationConfig::default()).unwrap();
    assert_eq!(cal.graph.len(), 10.min(cal.candidates.len()));
    let mut saved = 0;
    for p in 6..10u32 {
        let prompt = [p, 3];
        let vanilla = generate(&mut toy(7, 6.0), &prompt, &decode).unwrap();
        let cfg = SpiffyConfig {
            decode,
            draft_budget: 3,
            record_chains: false,
            timing: false,
        };
        let sp = generate_spiffy(&mut toy(7, 6.0), &prompt, &cal.graph, &cfg).unwrap();
        assert_eq!(sp.output.tokens, vanilla.tokens);
        saved += vanilla.nfe - sp.output.nfe;
    }
    assert!(saved > 0, "no call saved");
}

/// Bad configuration is an error, not a panic.
#[test]
fn bad_config_is_an_error() {
    let mut m = toy(1, 2.0);
    for decode in [
        DecodeConfig {
            block_len: 0,
            ..DecodeConfig::default()
        },
        DecodeConfig {
            temperature: f64::NAN,
            ..DecodeConfig::default()
        },
        DecodeConfig {
            unmasking: Unmasking::Threshold { tau: 1.5 },
            ..DecodeConfig::default()
        },
        DecodeConfig {
            unmasking: Unmasking::Static { per_step: 0 },
            ..DecodeConfig::default()
        },
    ] {
        assert!(generate(&mut m, &[1], &decode).is_err());
        let cfg = SpiffyConfig {
            decode,
            ..SpiffyConfig::default()
        };
        assert!(generate_spiffy(&mut m, &[1], &DraftGraph::top1_chain(3), &cfg).is_err());
    }
    // tokens outside the vocabulary are the model's error
    let ok = DecodeConfig {
        gen_len: 4,
        block_len: 4,
        ..DecodeConfig::default()
    };
    assert!(generate(&mut m, &[99], &ok).is_err());
}

/// A model that loses its draft marginals or returns short rows: an error,
/// never a panic.
#[test]
fn misbehaving_model_is_an_error() {
    use zapspec_core::{BlockMarginals, DiffusionModel, ModelError};
    struct Broken(ToyDiffusion, bool);
    impl DiffusionModel for Broken {
        fn vocab_size(&self) -> usize {
            self.0.vocab_size()
        }
        fn mask_token(&self) -> TokenId {
            self.0.mask_token()
        }
        fn denoise(
            &mut self,
            seq: &[TokenId],
            block: std::ops::Range<usize>,
            drafts: &[Vec<TokenId>],
        ) -> Result<BlockMarginals, ModelError> {
            let mut out = self.0.denoise(seq, block, drafts)?;
            if self.1 {
                out.drafts.clear();
            } else {
                out.main = out.main.slice(ndarray::s![1.., ..]).to_owned();
            }
            Ok(out)
        }
        fn nfe(&self) -> usize {
            self.0.nfe()
        }
    }
    let cfg = SpiffyConfig {
        decode: DecodeConfig {
            gen_len: 8,
            block_len: 8,
            ..DecodeConfig::default()
        },
        ..SpiffyConfig::default()
    };
    for drop_drafts in [true, false] {
        let mut m = Broken(toy(3, 4.0), drop_drafts);
        assert!(generate_spiffy(&mut m, &[1], &DraftGraph::top1_chain(4), &cfg).is_err());
    }
}
