//! Progress bars on stderr for anything longer than a second, hidden with `--quiet`. When
//! stderr is not a terminal (a log file, CI, a batch job) the same progress is written as a
//! plain line every [`LOG_EVERY`]: count, rate and time left, without control characters.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle, TermLike};

/// How often progress is written as a line when stderr is not a terminal.
pub const LOG_EVERY: Duration = Duration::from_secs(10);

#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub quiet: bool,
}

/// A rate as a person reads it: `1074/s`, `96.3/s`, `0.42/s`.
fn rate(state: &ProgressState, w: &mut dyn std::fmt::Write) {
    let r = state.per_sec();
    let digits = if r >= 100.0 {
        0
    } else if r >= 10.0 {
        1
    } else {
        2
    };
    let _ = write!(w, "{r:.digits$}/s");
}

impl Progress {
    /// A bar over `len` items labelled `label`.
    pub fn bar(&self, len: u64, label: &str) -> ProgressBar {
        if self.quiet {
            return ProgressBar::hidden();
        }
        let terminal = std::io::stderr().is_terminal();
        let (target, template) = if terminal {
            (
                ProgressDrawTarget::stderr_with_hz(4),
                "{prefix:>28} [{bar:30}] {pos}/{len} {rate:>10} eta {eta}",
            )
        } else {
            (
                ProgressDrawTarget::term_like(Box::new(LogLines::default())),
                "{prefix}: {pos}/{len}, {rate}, {elapsed} elapsed, about {eta} left",
            )
        };
        let bar = ProgressBar::with_draw_target(Some(len), target);
        let style = ProgressStyle::with_template(template)
            .expect("valid template")
            .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                rate(s, w)
            })
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

/// A "terminal" that writes what the bar draws as a plain line on stderr every [`LOG_EVERY`]
/// (the first one [`LOG_EVERY`] after the bar starts: a task shorter than that writes nothing),
/// ignoring cursor movement.
#[derive(Debug)]
struct LogLines {
    /// The text drawn since the last flush, and when a line was last written (or the bar made).
    state: Mutex<(String, Instant)>,
}

impl Default for LogLines {
    fn default() -> LogLines {
        LogLines {
            state: Mutex::new((String::new(), Instant::now())),
        }
    }
}

impl LogLines {
    fn push(&self, text: &str) {
        if let Ok(mut state) = self.state.lock() {
            state.0.push_str(text);
        }
    }
}

impl TermLike for LogLines {
    fn width(&self) -> u16 {
        200
    }
    fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
        Ok(())
    }
    fn write_line(&self, s: &str) -> std::io::Result<()> {
        self.push(s);
        self.push(" ");
        Ok(())
    }
    fn write_str(&self, s: &str) -> std::io::Result<()> {
        self.push(s);
        Ok(())
    }
    fn clear_line(&self) -> std::io::Result<()> {
        if let Ok(mut state) = self.state.lock() {
            state.0.clear();
        }
        Ok(())
    }
    fn flush(&self) -> std::io::Result<()> {
        let Ok(mut state) = self.state.lock() else {
            return Ok(());
        };
        let line = state.0.trim().to_string();
        state.0.clear();
        if state.1.elapsed() >= LOG_EVERY && !line.is_empty() {
            state.1 = Instant::now();
            let mut err = std::io::stderr().lock();
            writeln!(err, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_lines_write_plain_lines_at_most_every_interval() {
        let log = LogLines::default();
        let made = log.state.lock().unwrap().1;
        log.write_str("sweep: 0/10").unwrap();
        log.flush().unwrap();
        assert_eq!(
            log.state.lock().unwrap().1,
            made,
            "nothing in the first interval"
        );
        // An interval later the next draw is written.
        log.state.lock().unwrap().1 = Instant::now() - LOG_EVERY;
        log.write_str("sweep: 1/10").unwrap();
        log.flush().unwrap();
        let first = log.state.lock().unwrap().1;
        assert!(first > made, "written once due");
        log.clear_line().unwrap();
        log.write_str("sweep: 2/10").unwrap();
        log.flush().unwrap();
        assert_eq!(
            log.state.lock().unwrap().1,
            first,
            "the next waits its turn"
        );
        assert!(log.state.lock().unwrap().0.is_empty());
    }
}
