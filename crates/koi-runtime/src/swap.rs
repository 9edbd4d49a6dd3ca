//! Replacing a pipeline's program while it forwards: [`Pipeline::swap`], what `koi ctl load`
//! and P4Runtime's `RECONCILE_AND_COMMIT` / `VERIFY_AND_COMMIT` do.
//!
//! The new program is compiled by the caller, away from the poll threads. With the state
//! carried over, [`koi_state::carry::carry_over`] copies what still fits (its module doc has
//! the rules) from the running image's state into the new program's fresh one, under the old
//! image's state lock: between two batches of every poll thread and between two control-plane
//! requests. The new image is published and the old one retired before that lock is released
//! ([`Pipeline::reload`]), so every packet is processed wholly by one program, none is
//! dropped by the swap, and a packet counted in a register before the swap is in the carried
//! register. When something cannot be carried, nothing changes and every reason is listed.
//! With `reset` the new program starts with a fresh state, as `VERIFY_AND_COMMIT` does.
//! The tables of a POF program are not carried to or from: their entries are its
//! configuration's ([`crate::pof`]).

use crate::image::Image;
use crate::pipeline::Pipeline;
use crate::program::Program;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long [`Pipeline::swap`] waits for the poll threads to leave the old image before it
/// reports without that figure.
const MOVE_WAIT: Duration = Duration::from_secs(2);

/// What a swap did.
#[derive(Clone, Debug)]
pub struct SwapReport {
    /// The pipeline and the new program's name.
    pub pipeline: String,
    pub program: String,
    /// The new image's generation.
    pub generation: u64,
    /// The new image (unless it is gone already: another swap came after).
    pub image: std::sync::Weak<Image>,
    /// What was carried over (one line per kind of object), or `None` for a fresh state.
    pub carried: Option<Vec<String>>,
    /// What was allowed to be lost, one line each (a register shrunk, a direct counter gone).
    pub losses: Vec<String>,
    /// From the request to the new image in place (state built, carried over, published).
    pub swapped_in: Duration,
    /// From the request to the last poll thread leaving the old image (`None`: not within
    /// two seconds, or there was no old image).
    pub all_threads_moved: Option<Duration>,
}

impl std::fmt::Display for SwapReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "pipeline {}: {} loaded (generation {}) in {:.1} ms{}",
            self.pipeline,
            self.program,
            self.generation,
            self.swapped_in.as_secs_f64() * 1e3,
            match self.all_threads_moved {
                Some(d) => format!(
                    ", every poll thread on it after {:.1} ms",
                    d.as_secs_f64() * 1e3
                ),
                None => String::new(),
            }
        )?;
        match &self.carried {
            None => writeln!(f, "state: fresh")?,
            Some(lines) if lines.is_empty() => {
                writeln!(f, "state: carried over (nothing to carry)")?
            }
            Some(lines) => {
                writeln!(f, "state carried over:")?;
                for l in lines {
                    writeln!(f, "  {l}")?;
                }
            }
        }
        for l in &self.losses {
            writeln!(f, "lost: {l}")?;
        }
        Ok(())
    }
}

impl Pipeline {
    /// Replaces the program with `program`: with the running state carried over, or with a
    /// fresh one (`reset`). On error (the program cannot run here, or its state cannot be
    /// carried over: every reason listed) nothing changes.
    pub fn swap(&self, program: Arc<Program>, reset: bool) -> Result<SwapReport, String> {
        let start = Instant::now();
        let old = self.image();
        let name = program.name.clone();
        let (image, carried, losses) = if reset {
            let image = self.load(program, |_| Ok(()))?;
            (image, None, Vec::new())
        } else {
            let new_program = Arc::clone(&program);
            // The old program's state as it loaded, built here rather than under the old
            // image's lock, which forwarding waits for (a load in between makes it useless;
            // carry_over_from then builds its own).
            let initial = old
                .as_ref()
                .and_then(|i| koi_state::State::new(&i.program().pipeline).ok());
            // A POF program's tables hold its configuration's entries, never carried: the
            // old ones are the old configuration's, the new ones were written with the new
            // state ([`Pipeline::verify`]).
            let new_pof_tables: std::collections::HashSet<&str> = match new_program.pof {
                Some(_) => new_program
                    .pipeline
                    .tables
                    .iter()
                    .map(|(_, t)| t.preamble.name.as_str())
                    .collect(),
                None => Default::default(),
            };
            let (image, report) = self.reload(program, |old_state, old_program, new_state| {
                let old_pof = old_program.pof.is_some();
                koi_state::carry::carry_over_except(
                    old_state,
                    initial.as_ref(),
                    &old_program.pipeline,
                    new_state,
                    &new_program.pipeline,
                    &|t| old_pof || new_pof_tables.contains(t),
                )
                .map_err(|problems| {
                    let mut msg = format!(
                        "cannot carry the state over to {} (nothing changed):",
                        new_program.name
                    );
                    for p in problems {
                        msg.push_str(&format!("\n  {p}"));
                    }
                    msg
                })
            })?;
            let (carried, losses) = match report {
                Some(r) => (r.carried_lines(), r.loss_lines()),
                None => (Vec::new(), Vec::new()),
            };
            (image, Some(carried), losses)
        };
        let swapped_in = start.elapsed();
        let all_threads_moved = old.and_then(|o| wait_until_left(o, start));
        Ok(SwapReport {
            pipeline: self.name().to_string(),
            program: name,
            generation: image.generation(),
            image: Arc::downgrade(&image),
            carried,
            losses,
            swapped_in,
            all_threads_moved,
        })
    }
}

/// Waits (bounded) until nothing but this function holds `old`; the time since `start`.
fn wait_until_left(old: Arc<Image>, start: Instant) -> Option<Duration> {
    while Arc::strong_count(&old) > 1 {
        if start.elapsed() > MOVE_WAIT {
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Some(start.elapsed())
}
