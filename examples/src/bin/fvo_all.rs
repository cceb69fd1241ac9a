//! Runs every future-validity experiment binary (`fvo_e1`, `fvo_e2`,
//! `fvo_e3`, `fvo_e5`, `fvo_table8`, `fvo_table16`, `fvo_overhead`) one
//! after the other,
//! passing `--out`/`--quick`/`--seed` through, and prints each one's wall time and
//! the total. Binaries that are not built yet are built first, with the
//! profile and target directory `fvo_all` itself was built with:
//!
//! ```sh
//! cargo run --release -p examples --bin fvo_all -- [--out DIR] [--quick] [--seed N]
//! ```

use std::path::Path;
use std::process::Command;

use examples::report::{write_json, CommonArgs, MarkdownTable};

/// The experiment binaries, in the order they run.
const EXPERIMENTS: [&str; 7] = [
    "fvo_table8",
    "fvo_e1",
    "fvo_e2",
    "fvo_e3",
    "fvo_e5",
    "fvo_table16",
    "fvo_overhead",
];

/// Builds `names` with the profile and target directory of this binary
/// (`<target-dir>/<profile-dir>/fvo_all`; `debug` is the `dev` profile),
/// through the `cargo` that ran it (`$CARGO`) or the one on `PATH`.
fn build(dir: &Path, names: &[&str]) -> anyhow::Result<()> {
    let profile_dir = dir
        .file_name()
        .and_then(|s| s.to_str())
        .ok_or_else(|| anyhow::anyhow!("no profile directory in {}", dir.display()))?;
    let profile = if profile_dir == "debug" {
        "dev"
    } else {
        profile_dir
    };
    let target_dir = dir
        .parent()
        .ok_or_else(|| anyhow::anyhow!("no target directory above {}", dir.display()))?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--manifest-path")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .arg("--profile")
        .arg(profile)
        .arg("--target-dir")
        .arg(target_dir);
    for n in names {
        cmd.arg("--bin").arg(n);
    }
    eprintln!("building {} (profile {profile})", names.join(", "));
    let status = cmd.status()?;
    anyhow::ensure!(
        status.success(),
        "building {} failed ({status})",
        names.join(", ")
    );
    Ok(())
}

/// `--help` text of this binary.
const ABOUT: &str = "Runs every future-validity experiment binary (`--out`, `--quick` and `--seed` passed through; without `--seed` each uses its own default).";

fn main() -> anyhow::Result<()> {
    let args = CommonArgs::parse_with_about(ABOUT);
    let exe = std::env::current_exe()?;
    let dir = exe
        .parent()
        .ok_or_else(|| anyhow::anyhow!("no directory for {}", exe.display()))?;
    let t0 = std::time::Instant::now();
    let bin = |name: &str| dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));
    let missing: Vec<&str> = EXPERIMENTS
        .into_iter()
        .filter(|n| !bin(n).exists())
        .collect();
    let mut t = MarkdownTable::new(&["experiment", "status", "seconds"]);
    let mut rows = Vec::new();
    if !missing.is_empty() {
        build(dir, &missing)?;
        let secs = t0.elapsed().as_secs_f64();
        t.row(&[
            format!("(build {})", missing.join(", ")),
            "ok".into(),
            format!("{secs:.1}"),
        ]);
        rows.push(serde_json::json!({"experiment": "build", "built": missing, "seconds": secs}));
    }
    let mut failed = false;
    for name in EXPERIMENTS {
        let bin = bin(name);
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
