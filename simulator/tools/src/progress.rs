//! A progress bar for long replays (indicatif, on stderr): it appears only
//! once a replay has run for [`SHOW_AFTER_S`] and only when stderr is a
//! terminal, and counts the actions replayed and their rate.

use std::cell::RefCell;
use std::io::IsTerminal;
use std::rc::Rc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use simulator::replay::ActionStream;

/// Seconds of replay before the bar appears.
pub const SHOW_AFTER_S: f64 = 1.0;

/// Actions between two looks at the clock.
const TICK: u64 = 1 << 14;

struct State {
    started: Instant,
    actions: u64,
    bar: Option<ProgressBar>,
    tty: bool,
}

impl State {
    /// Called every [`TICK`] actions.
    fn tick(&mut self) {
        self.actions += TICK;
        if !self.tty {
            return;
        }
        if self.bar.is_none() && self.started.elapsed().as_secs_f64() >= SHOW_AFTER_S {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} replay: {human_pos} actions ({per_sec}), {elapsed}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            self.bar = Some(bar);
        }
        if let Some(b) = &self.bar {
            b.set_position(self.actions);
        }
    }
}

/// The bar of one replay; [`Progress::finish`] clears it.
#[derive(Clone)]
pub struct Progress(Rc<RefCell<State>>);

impl Progress {
    /// Clears the bar, if it was shown.
    pub fn finish(&self) {
        if let Some(b) = self.0.borrow_mut().bar.take() {
            b.finish_and_clear();
        }
    }
}

/// Wraps `streams` so that the actions they yield drive a progress bar.
pub fn with_progress<'a, E: 'a>(streams: Vec<ActionStream<'a, E>>) -> (Vec<ActionStream<'a, E>>, Progress) {
    let state = Rc::new(RefCell::new(State { started: Instant::now(), actions: 0, bar: None, tty: std::io::stderr().is_terminal() }));
    if !state.borrow().tty {
        return (streams, Progress(state)); // no bar, no cost
    }
    let count = Rc::new(std::cell::Cell::new(0u64));
    let out = streams
        .into_iter()
        .map(|s| {
            let (st, n) = (state.clone(), count.clone());
            Box::new(s.inspect(move |_| {
                n.set(n.get() + 1);
                if n.get() % TICK == 0 {
                    st.borrow_mut().tick();
                }
            })) as ActionStream<'a, E>
        })
        .collect();
    (out, Progress(state))
}

/// A bar over a known number of steps (the phases of `simulator jitter`'s
/// runs): drawn on stderr once [`SHOW_AFTER_S`] have passed, only when
/// stderr is a terminal.
pub struct StepBar {
    started: Instant,
    bar: ProgressBar,
    shown: std::cell::Cell<bool>,
    tty: bool,
}

impl StepBar {
    /// A hidden bar of `total` steps labelled `what`.
    pub fn new(total: u64, what: &str) -> StepBar {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
        let template = format!("{what}: {{bar:30}} {{human_pos}}/{{human_len}} phases, {{elapsed}} (eta {{eta}})");
        bar.set_style(ProgressStyle::with_template(&template).unwrap_or_else(|_| ProgressStyle::default_bar()));
        StepBar { started: Instant::now(), bar, shown: std::cell::Cell::new(false), tty: std::io::stderr().is_terminal() }
    }

    /// One step done.
    pub fn inc(&self) {
        self.bar.inc(1);
        if self.tty && !self.shown.get() && self.started.elapsed().as_secs_f64() >= SHOW_AFTER_S {
            self.shown.set(true);
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }

    /// Clears the bar, if it was shown.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
