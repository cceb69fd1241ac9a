//! Calibration over steps whose marginals give some candidate probability
//! exactly zero (a constrained or `-inf` logit): the token a later step
//! unmasks may have probability zero at an earlier step, and its vocabulary
//! rank is still defined (Eq. 11 sorts the whole vocabulary).

use std::ops::Range;

use ndarray::Array2;
use zapspec_core::model::check_denoise_args;
use zapspec_core::{BlockMarginals, DiffusionModel, ModelError, TokenId};
use zapspec_spiffy::calibrate::record_trajectory;
use zapspec_spiffy::marginals::Marginals;
use zapspec_spiffy::{Anchor, DecodeConfig, DraftFormula, Unmasking};

/// Per step, per offset, the `(token, probability)` pairs of the row
/// (`None`: an unmasked offset).
type Script = Vec<Vec<Option<Vec<(TokenId, f64)>>>>;

/// A two-position block whose rows are scripted by how many positions are
/// still masked: `rows[step][offset]` lists `(token, probability)`; every
/// other token (and the mask) gets logit `-inf`.
struct Scripted {
    vocab: usize,
    nfe: usize,
    mask: TokenId,
    rows: Script,
}

impl Scripted {
    fn logits(&self, block: &[TokenId]) -> Array2<f32> {
        let masked = block.iter().filter(|&&t| t == self.mask).count();
        let step = block.len() - masked;
        let mut out = Array2::from_elem((block.len(), self.vocab), f32::NEG_INFINITY);
        for (n, row) in self.rows[step].iter().enumerate() {
            for &(t, p) in row.iter().flatten() {
                out[[n, t as usize]] = p.ln() as f32;
            }
        }
        out
    }
}

impl DiffusionModel for Scripted {
    fn vocab_size(&self) -> usize {
        self.vocab
    }
    fn mask_token(&self) -> TokenId {
        self.mask
    }
    fn denoise(
        &mut self,
        seq: &[TokenId],
        block: Range<usize>,
        drafts: &[Vec<TokenId>],
    ) -> Result<BlockMarginals, ModelError> {
        check_denoise_args(seq, &block, drafts, self.vocab)?;
        self.nfe += 1;
        Ok(BlockMarginals {
            main: self.logits(&seq[block.clone()]),
            drafts: drafts.iter().map(|d| self.logits(d)).collect(),
        })
    }
    fn nfe(&self) -> usize {
        self.nfe
    }
}

fn decode_cfg() -> DecodeConfig {
    DecodeConfig {
        gen_len: 2,
        block_len: 2,
        unmasking: Unmasking::Static { per_step: 1 },
        temperature: 0.0,
        seed: 0,
    }
}

/// Step 0: position 0 `{a: 1, b: 0}`, position 1 `{c: 1, d: 0}`; position 0
/// is unmasked to `a`. Step 1: position 1 `{d: 1, c: 0}`, unmasked to `d`,
/// a token of probability zero under step 0's marginals.
fn model(vocab: usize, mask: TokenId, [a, b, c, d]: [TokenId; 4]) -> Scripted {
    Scripted {
        vocab,
        nfe: 0,
        mask,
        rows: vec![
            vec![
                Some(vec![(a, 1.0), (b, 0.0)]),
                Some(vec![(c, 1.0), (d, 0.0)]),
            ],
            vec![None, Some(vec![(d, 1.0), (c, 0.0)])],
        ],
    }
}

#[test]
fn a_zero_probability_token_gets_its_eq_11_rank() {
    // Tokens {0, 1} at both positions, mask 2: the vocabulary sorted at
    // position 1 in step 0 is [0 (p = 1), 1 (p = 0)], so token 1 has
    // vocabulary rank 2; position 1 has position rank 2 (equal confidence,
    // lower offset first).
    let mut m = model(3, 2, [0, 1, 0, 1]);
    let traj = record_trajectory(&mut m, &[], &decode_cfg(), 1).unwrap();
    assert_eq!(traj.output.tokens, vec![0, 1]);
    let want_0 = DraftFormula::new([(1, 1)]).unwrap();
    let want_1 = DraftFormula::new([(2, 2)]).unwrap();
    assert_eq!(
        traj.records[0].unmasked,
        vec![want_0.clone(), want_1.clone()]
    );
    assert_eq!(
        traj.records[0].cumulative(1),
        Some(DraftFormula::new([(1, 1), (2, 2)]).unwrap())
    );
}

#[test]
fn the_brief_example_records_and_fills_back() {
    // Tokens 5..8 of a vocabulary of 10 (mask 9): the unlisted tokens are
    // zero-probability too, and rank by id among the zero-probability
    // tokens (Eq. 11's sort with the crate's tie rule).
    let mut m = model(10, 9, [5, 6, 7, 8]);
    let traj = record_trajectory(&mut m, &[], &decode_cfg(), 1).unwrap();
    assert_eq!(traj.output.tokens, vec![5, 8]);
    let f = traj.records[0].cumulative(1).unwrap();
    // The formula fills back to the true state from step 0's anchor.
    let logits = m.logits(&[9, 9]);
    let anchor = Anchor::new(vec![9, 9], Marginals::new(&logits, &[9, 9], 9).unwrap());
    assert_eq!(anchor.fill(&f), Some(vec![5, 8]));
    assert_eq!(anchor.formula_of(&[5, 8]), Some(f.clone()));
    // (1, 1) for token 5; token 8 at position rank 2 has vocabulary rank 9:
    // after token 7 (p = 1) and the zero-probability ids 0..=6 (the mask,
    // 9, is not ranked).
    assert_eq!(f, DraftFormula::new([(1, 1), (2, 9)]).unwrap());
    assert_eq!(anchor.log_prob(&f), Some(f64::NEG_INFINITY));
}
