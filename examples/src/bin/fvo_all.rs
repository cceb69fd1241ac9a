//! Runs every future-validity experiment binary (`fvo_e1`, `fvo_e2`,
//! `fvo_e3`, `fvo_e5`, `fvo_table8`, `fvo_table16`, `fvo_overhead`) one
//! after the other,
//! passing `--out`/`--quick`/`--seed` through, and prints each one's wall time and
//! the total. The binaries must be built first (same profile):
//!
//! ```sh
//! cargo build --release -p examples --bin fvo_all --bin fvo_e1 --bin fvo_e2 \
//!     --bin fvo_e3 --bin fvo_e5 --bin fvo_table8 --bin fvo_table16 --bin fvo_overhead
//! target/release/fvo_all [--out DIR] [--quick] [--seed N]
//! ```

use std::process::Command;

use examples::report::{write_json, CommonArgs, MarkdownTable};

/// `--help` text of this binary.
const ABOUT: &str = "Runs every future-validity experiment binary (`--out`, `--quick` and `--seed` passed through; without `--seed` each uses its own default).";

fn main() -> anyhow::Result<()> {
    let args = CommonArgs::parse_with_about(ABOUT);
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| anyhow::anyhow!("no directory for {}", exe.display()))?;
    let t0 = std::time::Instant::now();
    let mut t = MarkdownTable::new(&["experiment", "status", "seconds"]);
    let mut rows = Vec::new();
    let mut failed = false;
    for name in [
        "fvo_table8",
        "fvo_e1",
        "fvo_e2",
        "fvo_e3",
        "fvo_e5",
        "fvo_table16",
        "fvo_overhead",
    ] {
        let bin = dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
        if !bin.exists() {
            anyhow::bail!(
                "{} is not built; build it with the same profile as fvo_all",
                bin.display()
            );
        }
        let t1 = std::time::Instant::now();
        let mut cmd = Command::new(&bin);
        cmd.arg("--out").arg(&args.out);
        if args.quick {
            cmd.arg("--quick");
        }
        if let Some(seed) = args.seed {
            cmd.arg("--seed").arg(seed.to_string());
        }
        let status = cmd.status()?;
        let secs = t1.elapsed().as_secs_f64();
        failed |= !status.success();
        t.row(&[
            name.to_string(),
            if status.success() {
                "ok".into()
            } else {
                format!("failed ({status})")
            },
            format!("{secs:.1}"),
        ]);
        rows.push(serde_json::json!({"experiment": name, "ok": status.success(), "seconds": secs}));
        println!();
    }
    let total = t0.elapsed().as_secs_f64();
    println!(
        "## All future-validity experiments\n\n{}\ntotal wall time: {total:.1}s",
        t.render()
    );
    write_json(
        &args.out,
        "fvo_all",
        &serde_json::json!({"runs": rows, "total_seconds": total, "quick": args.quick}),
    )?;
    if failed {
        anyhow::bail!("some experiments failed");
    }
    Ok(())
}
