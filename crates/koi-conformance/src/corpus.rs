//! Running STF tests: one program with its STF file, or every test of a directory laid out
//! like p4c's corpus (`NAME.p4` beside `NAME.stf`, in any number of subdirectories).

use crate::compile::compile;
use crate::stf::RunOptions;
use koi_syntax::PpOptions;
use std::fmt;
use std::path::{Path, PathBuf};

/// One STF test: a program and its STF file.
#[derive(Clone, Debug)]
pub struct TestCase {
    /// The test's name: the STF file's path relative to the directory searched, without
    /// extension (`v1model/arith-bmv2`).
    pub name: String,
    pub program: PathBuf,
    pub stf: PathBuf,
    /// The C file (or shared object) implementing the program's extern functions, from the
    /// directory's `EXTERNS.tsv` (`TEST<TAB>PATH`, the path relative to the directory).
    pub externs: Option<PathBuf>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Pass,
    /// The packets or the table writes differed from what the test expects.
    Fail(Vec<String>),
    /// The program did not compile.
    CompileError(String),
    /// The STF file has errors (p4c's runners fail such a test too).
    BadStf(String),
    /// koi panicked: always a koi bug.
    Panic(String),
}

impl Verdict {
    pub fn passed(&self) -> bool {
        *self == Verdict::Pass
    }

    /// A one-line reason for a failure.
    pub fn reason(&self) -> String {
        match self {
            Verdict::Pass => "passed".into(),
            Verdict::Fail(f) => {
                let first = f
                    .first()
                    .map(|s| s.lines().next().unwrap_or(""))
                    .unwrap_or("");
                format!("{} failure(s): {first}", f.len())
            }
            Verdict::CompileError(e) => format!("compile error: {e}"),
            Verdict::BadStf(e) => format!("bad STF file: {e}"),
            Verdict::Panic(e) => format!("koi panicked: {e}"),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason())
    }
}

#[derive(Clone, Debug)]
pub struct TestResult {
    pub name: String,
    pub verdict: Verdict,
    pub notes: Vec<String>,
    pub packets_in: usize,
    pub packets_checked: usize,
}

/// Every test under `dir` (recursively), sorted by name. An STF file without a program of the
/// same name is skipped.
pub fn discover(dir: &Path) -> Vec<TestCase> {
    let mut out = Vec::new();
    walk(dir, dir, &mut out, 0);
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<TestCase>, depth: usize) {
    if depth > 16 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let externs = read_externs(dir);
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, out, depth + 1);
        } else if p.extension().is_some_and(|x| x == "stf") {
            let program = p.with_extension("p4");
            if program.is_file() {
                let rel = p.strip_prefix(root).unwrap_or(&p).with_extension("");
                let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
                out.push(TestCase {
                    name: rel.display().to_string(),
                    program,
                    externs: stem.and_then(|s| externs.get(&s).cloned()),
                    stf: p,
                });
            }
        }
    }
}

/// The `EXTERNS.tsv` of a directory: test name → the extern implementation's path (relative
/// paths taken from the directory). Blank lines and `#` comments are skipped.
pub fn read_externs(dir: &Path) -> std::collections::HashMap<String, PathBuf> {
    let mut out = std::collections::HashMap::new();
    let Ok(text) = std::fs::read_to_string(dir.join("EXTERNS.tsv")) else {
        return out;
    };
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((test, path)) = line.split_once('\t') {
            out.insert(test.trim().to_string(), dir.join(path.trim()));
        }
    }
    out
}

/// Runs test case `c` (with its extern implementation, or `fallback`'s if it names none).
pub fn run_case(
    c: &TestCase,
    opts: &PpOptions,
    run: &RunOptions,
    fallback: Option<&Path>,
) -> TestResult {
    let externs = c.externs.as_deref().or(fallback);
    run_test_with_externs(&c.name, &c.program, &c.stf, opts, run, externs)
}

/// Compiles `program` and runs `stf` against it. The program's own directory is searched for
/// includes after `opts.include_dirs`. Never panics: a panic inside koi is a `Panic` verdict.
pub fn run_test(name: &str, program: &Path, stf: &Path, opts: &PpOptions) -> TestResult {
    run_test_with(name, program, stf, opts, &RunOptions::default())
}

/// [`run_test`], processing packets as `run` says (interpreter or cached datapath).
pub fn run_test_with(
    name: &str,
    program: &Path,
    stf: &Path,
    opts: &PpOptions,
    run: &RunOptions,
) -> TestResult {
    run_test_with_externs(name, program, stf, opts, run, None)
}

/// [`run_test_with`] with the implementation of the program's extern functions.
pub fn run_test_with_externs(
    name: &str,
    program: &Path,
    stf: &Path,
    opts: &PpOptions,
    run: &RunOptions,
    externs: Option<&Path>,
) -> TestResult {
    let run = *run;
    let externs = externs.map(Path::to_path_buf);
    let mut opts = opts.clone();
    if let Some(dir) = program.parent() {
        opts.include_dirs.push(dir.to_path_buf());
    }
    let name = name.to_string();
    let (program, stf) = (program.to_path_buf(), stf.to_path_buf());
    let n = name.clone();
    std::panic::catch_unwind(move || {
        run_unrun_test_with_externs(n, &program, &stf, &opts, &run, externs.as_deref())
    })
    .unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        TestResult {
            name,
            verdict: Verdict::Panic(msg),
            notes: Vec::new(),
            packets_in: 0,
            packets_checked: 0,
        }
    })
}

fn run_unrun_test_with_externs(
    name: String,
    program: &Path,
    stf: &Path,
    opts: &PpOptions,
    run: &RunOptions,
    externs: Option<&Path>,
) -> TestResult {
    let result = |verdict| TestResult {
        name: name.clone(),
        verdict,
        notes: Vec::new(),
        packets_in: 0,
        packets_checked: 0,
    };
    let text = match koi_syntax::input::read_text(stf, koi_syntax::input::MAX_STF) {
        Ok(t) => t,
        Err(e) => return result(Verdict::BadStf(e.to_string())),
    };
    let lines = match koi_stf::parse(&text) {
        Ok(l) => l,
        Err(errs) => {
            let all: Vec<String> = errs.iter().map(|e| e.to_string()).collect();
            return result(Verdict::BadStf(all.join("; ")));
        }
    };
    let mut compiled = match compile(program, opts) {
        Ok(c) => c,
        Err(e) => return result(Verdict::CompileError(e.first_line())),
    };
    if let Err(e) = koi_native::bind(&mut compiled.pipeline, externs) {
        return result(Verdict::CompileError(e.to_string()));
    }
    let report = crate::stf::run_with(&compiled.pipeline, &lines, run);
    TestResult {
        name,
        verdict: if report.passed() {
            Verdict::Pass
        } else {
            Verdict::Fail(report.failures)
        },
        notes: report.notes,
        packets_in: report.packets_in,
        packets_checked: report.packets_checked,
    }
}

/// The results of a run as JSON: `{"passed": N, "failed": M, "tests": [{"name", "passed",
/// "reason"}...]}`.
pub fn to_json(results: &[TestResult]) -> String {
    let passed = results.iter().filter(|r| r.verdict.passed()).count();
    let tests: Vec<String> = results
        .iter()
        .map(|r| {
            format!(
                "{{\"name\":{},\"passed\":{},\"reason\":{},\"packets_in\":{},\"packets_checked\":{}}}",
                json_str(&r.name),
                r.verdict.passed(),
                json_str(&r.verdict.reason()),
                r.packets_in,
                r.packets_checked
            )
        })
        .collect();
    format!(
        "{{\"passed\":{passed},\"failed\":{},\"tests\":[{}]}}",
        results.len() - passed,
        tests.join(",")
    )
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
