//! The figure of `mheta scale check`: predicted and measured time per
//! iteration of each held-out configuration, as paired bars with the
//! error and noise floor above them, and under the plot the emulation,
//! the command, the date and the machine.

use anyhow::{Context, Result};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

const W: f64 = 900.0;
const H: f64 = 520.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 60.0;
const PLOT_H: f64 = 300.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The machine: CPU model and online cores.
fn machine() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|x| x.1.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cores} cores")
}

/// Today's date (UTC) from `date`.
fn today() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

/// Draw `out` (the check's JSON) to `path`.
pub fn draw(path: &Path, out: &Value) -> Result<()> {
    let rows = out["configs"].as_array().context("no configs")?;
    let top = rows
        .iter()
        .flat_map(|r| [r["predicted_s"].as_f64(), r["actual_s"].as_f64()])
        .flatten()
        .fold(0.0f64, f64::max)
        * 1.2e3;
    let top = top.max(1e-9);
    let y = |ms: f64| TOP + PLOT_H - ms / top * PLOT_H;
    let slot = (W - LEFT - 20.0) / rows.len().max(1) as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/>"#
    );
    let _ = write!(
        s,
        r#"<text x="{LEFT}" y="24" font-size="15">{} N={}: Romanazzi and Jimack model, predicted vs measured (fit on np &lt;= 4), max error {:.2}%</text>"#,
        esc(out["app"].as_str().unwrap_or("?")),
        out["n"],
        out["max_err_pct"].as_f64().unwrap_or(f64::NAN)
    );
    axis(&mut s, top, &y);
    for (i, r) in rows.iter().enumerate() {
        let x0 = LEFT + i as f64 * slot + slot * 0.15;
        let bw = slot * 0.33;
        for (k, (key, colour)) in [("predicted_s", "#4a7ebb"), ("actual_s", "#d9822b")]
            .iter()
            .enumerate()
        {
            let ms = r[*key].as_f64().unwrap_or(0.0) * 1e3;
            let _ = write!(
                s,
                r#"<rect x="{:.1}" y="{:.1}" width="{bw:.1}" height="{:.1}" fill="{colour}"/>"#,
                x0 + k as f64 * bw,
                y(ms),
                TOP + PLOT_H - y(ms)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{:.2}% (noise {:.1}%)</text><text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            x0 + bw,
            y(r["actual_s"]
                .as_f64()
                .unwrap_or(0.0)
                .max(r["predicted_s"].as_f64().unwrap_or(0.0))
                * 1e3)
                - 6.0,
            r["error_pct"].as_f64().unwrap_or(f64::NAN),
            r["noise_pct"].as_f64().unwrap_or(f64::NAN),
            x0 + bw,
            TOP + PLOT_H + 16.0,
            esc(r["config"].as_str().unwrap_or("?"))
        );
    }
    caption(&mut s, out);
    s.push_str("</svg>\n");
    std::fs::write(path, s).with_context(|| format!("{}: cannot write", path.display()))
}

fn axis(s: &mut String, top: f64, y: &dyn Fn(f64) -> f64) {
    let _ = write!(
        s,
        r#"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{}" stroke="black"/><line x1="{LEFT}" y1="{0}" x2="{}" y2="{0}" stroke="black"/>"#,
        TOP + PLOT_H,
        W - 20.0
    );
    for k in 0..=4 {
        let ms = top * k as f64 / 4.0;
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{ms:.1}</text>"#,
            LEFT - 6.0,
            y(ms) + 4.0
        );
    }
    let _ = write!(
        s,
        r##"<text x="20" y="{:.1}" transform="rotate(-90 20 {0:.1})" text-anchor="middle">ms per iteration</text><rect x="{1}" y="36" width="12" height="10" fill="#4a7ebb"/><text x="{2}" y="45">predicted</text><rect x="{3}" y="36" width="12" height="10" fill="#d9822b"/><text x="{4}" y="45">measured (median)</text>"##,
        TOP + PLOT_H / 2.0,
        W - 300.0,
        W - 284.0,
        W - 200.0,
        W - 184.0
    );
}

fn caption(s: &mut String, out: &Value) {
    let cmd: Vec<String> = std::env::args().collect();
    let lines = [
        format!(
            "Configurations GROUP=NP@ROWS on {} (rows of N = {}); times: medians of {} interleaved repeats of {} iterations.",
            out["spec"].as_str().unwrap_or("?"),
            out["n"],
            out["repeat"],
            out["iters"]
        ),
        format!("Emulation: {}.", out["emulation"].as_str().unwrap_or("?")),
        "One rank per emulated host; each keeps its cpu_power at every np (paced: a piece of work lasts its CPU time / cpu_power; clock: units x ns / cpu_power).".into(),
        format!("Command: {}", cmd.join(" ")),
        format!("Date: {}; machine: {}.", today(), machine()),
    ];
    for (i, l) in lines.iter().enumerate() {
        let _ = write!(
            s,
            r#"<text x="20" y="{:.1}" font-size="11">{}</text>"#,
            TOP + PLOT_H + 50.0 + i as f64 * 16.0,
            esc(l)
        );
    }
}
