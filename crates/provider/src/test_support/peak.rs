//! Peak memory of one attack, as the kernel accounts it: the hostile-input tests of this and
//! other crates assert a bound on memory, never on time.
//!
//! A test process shares its memory with every other test it runs, so [`measure`] runs the
//! attack in a fresh process: the same test binary again, running only the calling test. There
//! the peak resident size is reset (`/proc/self/clear_refs`), the attack runs, and the growth
//! of `VmHWM` (`/proc/self/status`) over the resident size before it is written to a report
//! file the parent reads.
//!
//! ```no_run
//! # fn demo() {
//! use codewhale_provider::test_support::peak;
//! let measured = peak::measure(module_path!(), "a_hostile_read", || "what it said".into());
//! let Some(peak) = measured.unwrap() else {
//!     return; // this was the child: it has reported
//! };
//! assert!(peak.growth < 64 << 20, "{peak:?}");
//! # }
//! ```

/// Set in the child to the file its report goes to.
const REPORT: &str = "CODEWHALE_PEAK_REPORT";

/// What one attack cost and said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peak {
    /// How far the peak resident size rose above the size before the attack, in bytes.
    pub growth: u64,
    /// What the attack returned (the error it met, the outcome it saw).
    pub said: String,
}

/// Runs `attack` in a child process and returns its [`Peak`]; in that child, runs the attack,
/// reports, and returns `None` (the caller returns at once). `module` is the caller's
/// `module_path!()`, `test` the test function's name. An error says why the child did not
/// report.
pub fn measure(
    module: &str,
    test: &str,
    attack: impl FnOnce() -> String,
) -> Result<Option<Peak>, String> {
    if let Some(report) = std::env::var_os(REPORT) {
        let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
        let before = if reset { status_kib("VmRSS") } else { status_kib("VmHWM") };
        let said = attack();
        let peak = status_kib("VmHWM");
        let growth = peak.saturating_sub(before) * 1024;
        std::fs::write(report, format!("{growth}\n{said}"))
            .map_err(|e| format!("the peak report cannot be written: {e}"))?;
        return Ok(None);
    }
    // The test's name as the harness knows it: the module path without the crate's name.
    let path = module.split_once("::").map_or("", |(_, rest)| rest);
    let name = if path.is_empty() { test.to_owned() } else { format!("{path}::{test}") };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let report =
        std::env::temp_dir().join(format!("codewhale-peak-{}-{nanos}-{test}", std::process::id()));
    let exe = std::env::current_exe().map_err(|e| format!("no test binary to run: {e}"))?;
    let out = std::process::Command::new(exe)
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads", "1"])
        .env(REPORT, &report)
        .output()
        .map_err(|e| format!("the child test cannot start: {e}"))?;
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    if !out.status.success() || text.is_empty() {
        return Err(format!(
            "the child running {name} did not report ({}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let (growth, said) = text.split_once('\n').unwrap_or((text.as_str(), ""));
    let growth = growth.trim().parse().map_err(|_| format!("a bad report: {text}"))?;
    Ok(Some(Peak { growth, said: said.to_owned() }))
}

/// A `kB` figure of `/proc/self/status` (0 where it cannot be read).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
