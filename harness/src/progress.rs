//! Progress bars on stderr for anything longer than a second; hidden with `--quiet` or when
//! stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub quiet: bool,
}

impl Progress {
    /// A bar over `len` items labelled `label`.
    pub fn bar(&self, len: u64, label: &str) -> ProgressBar {
        if self.quiet {
            return ProgressBar::hidden();
        }
        let bar = ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr_with_hz(4));
        let style = ProgressStyle::with_template(
            "{prefix:>28} [{bar:30}] {pos}/{len} {per_sec:>12} eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(label.to_string());
        bar
    }

    /// Prints a status line unless quiet (stderr, so stdout stays machine-readable).
    pub fn note(&self, text: &str) {
        if !self.quiet {
            eprintln!("{text}");
        }
    }
}
