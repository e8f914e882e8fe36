//! Placeholder for the built-in analyzers (being written on a helper branch): no analyzer yet.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use crate::floors::confine::Confined;
use crate::floors::sarif::Finding;
use crate::model::manifest::SarifUse;
use crate::policy::verification::Language;

pub struct Analyzer {
    pub name: &'static str,
    pub counts_as: SarifUse,
}

pub struct AnalyzerRun {
    pub name: String,
    pub counts_as: SarifUse,
    pub findings: Vec<Finding>,
    pub incomplete: Option<String>,
}

pub fn analyzers_for(_langs: &BTreeSet<Language>) -> Vec<Analyzer> {
    Vec::new()
}

pub fn run(
    analyzer: &Analyzer,
    _dir: &Path,
    _env: &[(&str, &str)],
    _timeout: Duration,
    _confined: Option<&Confined>,
) -> AnalyzerRun {
    AnalyzerRun {
        name: analyzer.name.into(),
        counts_as: analyzer.counts_as,
        findings: Vec::new(),
        incomplete: None,
    }
}
