//! The interface every engine adapter implements: compile a JSON Schema,
//! then drive one matcher per test instance (mask → check → advance).

use serde_json::Value;
use zapspec_core::TokenId;

/// Why a schema did not compile: a short `category` for the census table
/// and the full message.
#[derive(Clone, Debug)]
pub struct CompileFailure {
    pub category: String,
    pub message: String,
}

impl CompileFailure {
    pub fn new(category: impl Into<String>, message: impl Into<String>) -> Self {
        CompileFailure {
            category: category.into(),
            message: message.into(),
        }
    }
}

/// One engine (one configuration). Lives for the whole run (one process),
/// so per-tokenizer precomputation (token tries, slicers) is paid once and
/// not counted in TTFM, as in MaskBench.
pub trait Adapter {
    /// Work done before the TTFM clock starts (e.g. cloning a vocabulary
    /// that the engine's constructor takes by value).
    fn prepare(&mut self) {}
    /// Compiles a schema (counted in TTFM).
    fn compile(&mut self, schema: &Value) -> Result<Box<dyn Compiled>, CompileFailure>;
    /// Microseconds the engine has spent building terminal automata so far
    /// (cumulative), where it reports it: the run records the part of each
    /// schema's TTFM that went to determinisation.
    fn automaton_build_us(&self) -> Option<f64> {
        None
    }
    /// Microseconds the schema → grammar step alone takes for `schema`
    /// (engines with a separate schema compiler): run again after the
    /// TTFM clock stopped, so the compile counted in TTFM is the user's
    /// one call and this is its first part, measured apart.
    fn schema_step_us(&mut self, _schema: &Value) -> Option<f64> {
        None
    }
    /// Bytes the engine's shared cache counts against its bound now,
    /// where it keeps such an account (read after each schema, untimed).
    fn cache_bytes(&self) -> Option<u64> {
        None
    }
}

/// A compiled schema with one current matcher state.
pub trait Compiled {
    /// Starts a fresh matcher (a new instance).
    fn start(&mut self) -> Result<(), String>;
    /// Computes the mask of the current state (the timed operation).
    fn compute_mask(&mut self) -> Result<(), String>;
    /// Whether `t` is in the last computed mask.
    fn allowed(&self, t: TokenId) -> bool;
    /// Whether EOS is in the last computed mask.
    fn eos_allowed(&self) -> bool;
    /// Consumes `t`.
    fn advance(&mut self, t: TokenId) -> Result<(), String>;
    /// Peak live Earley items of the current matcher, where the engine
    /// reports it.
    fn peak_items(&self) -> Option<usize> {
        None
    }
}
