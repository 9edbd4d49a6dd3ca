//! Development helper: checks the P4 files given on the command line and prints diagnostics.
fn main() {
    for a in std::env::args().skip(1) {
        let path = std::path::Path::new(&a);
        let opts = koi_syntax::PpOptions {
            include_dirs: vec![
                "/work/shared/reference/p4include".into(),
                path.parent().map(|p| p.to_path_buf()).unwrap_or_default(),
            ],
            defines: Vec::new(),
        };
        let (sm, prog, pd) = koi_syntax::parse_file(path, &opts);
        let (_, d) = koi_sema::check(&prog, &koi_sema::CheckOptions::default());
        for x in pd.list.iter().chain(d.list.iter()) {
            print!("{}", x.render(&sm));
        }
    }
}
