//! `codewhale survival-check MATRIX.json`: runs a survival fixture matrix through the same
//! validator the engine uses before it writes a compaction record.
//!
//! Output contract (docs/cli.md): `ok N survival-contract fixtures` and exit 0 when every case
//! gets its expected verdict; otherwise one line per failing case id with the reason and exit
//! 1; a file that is not a valid matrix exits 2 with the reason on stderr.

use std::path::Path;
use std::process::ExitCode;

/// Runs the matrix at `path`.
pub fn run(path: &Path) -> anyhow::Result<ExitCode> {
    let report = match codewhale_engine::offline::survival_check(path) {
        Ok(report) => report,
        Err(err) => {
            errln!("codewhale: {}: {err}", path.display());
            return Ok(ExitCode::from(2));
        }
    };
    if report.mismatches.is_empty() {
        outln!("ok {} survival-contract fixtures", report.total);
        return Ok(ExitCode::SUCCESS);
    }
    for mismatch in &report.mismatches {
        outln!("{}: {}", mismatch.id, mismatch.reason);
    }
    Ok(ExitCode::from(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(path: &Path) -> String {
        format!("{:?}", run(path).unwrap())
    }

    #[test]
    fn exit_codes_follow_the_contract() {
        let shipped =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/compaction/matrix.json");
        assert_eq!(code(&shipped), format!("{:?}", ExitCode::SUCCESS));
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.json");
        std::fs::write(&bad, r#"{"schema_version":2}"#).unwrap();
        assert_eq!(code(&bad), format!("{:?}", ExitCode::from(2)));
        assert_eq!(code(&dir.path().join("missing.json")), format!("{:?}", ExitCode::from(2)));
        let wrong = dir.path().join("wrong.json");
        std::fs::write(
            &wrong,
            r#"{"schema_version":2,"cases":[{"id":"x","expect":"pass","original":[],"replacement":[]}]}"#,
        )
        .unwrap();
        assert_eq!(code(&wrong), format!("{:?}", ExitCode::from(1)));
    }
}
