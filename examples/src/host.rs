//! Facts about the host the example binaries report, and the font plotters
//! needs: shared by `train`, `kernel_study` and `fvo_e5`.

use plotters::style::FontStyle;

/// Places a TrueType font is usually found.
const FONT_PATHS: [&str; 6] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
    "C:\\Windows\\Fonts\\arial.ttf",
];

/// Registers the first font found as `sans-serif`: plotters' `ab_glyph`
/// backend draws text only with a registered font.
pub fn register_font() -> anyhow::Result<()> {
    for p in FONT_PATHS {
        if let Ok(bytes) = std::fs::read(p) {
            let font: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            return plotters::style::register_font("sans-serif", FontStyle::Normal, font)
                .map_err(|_| anyhow::anyhow!("cannot load the font {p}"));
        }
    }
    anyhow::bail!("no TrueType font found in the usual places")
}

/// The CPU model (from `/proc/cpuinfo`) and the number of logical cores.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
        + &format!(
            ", {} logical cores",
            std::thread::available_parallelism().map_or(0, |n| n.get())
        )
}
