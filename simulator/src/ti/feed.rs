//! A parser thread per rank file (the `parallel` feature): it parses
//! batches of actions a bounded number ahead of the replay and hands them
//! over under a mutex; a side that must wait sleeps on a condition
//! variable (no spinning, so waiting threads leave the cores to the
//! replay and the other parsers), and is woken only when it waits.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::action::Action;

use super::read::RankSource;
use super::TiError;

/// Batches ready ahead of the replay, at most (beyond the one the thread
/// fills and the one being replayed).
const AHEAD: usize = 2;

/// A batch: actions in reverse order (the next one last), then, at the
/// end of the file or at a bad line, how it ended.
pub(super) struct Batch {
    pub(super) actions: Vec<Action>,
    pub(super) end: Option<Result<(), TiError>>,
}

#[derive(Default)]
struct State {
    ready: VecDeque<Batch>,
    /// Replayed batches, for reuse.
    free: Vec<Vec<Action>>,
    /// The stream was dropped: the thread stops.
    gone: bool,
    /// The thread ended (after its last batch, or by a panic).
    stopped: bool,
    replay_waits: bool,
    parser_waits: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// A batch is ready or the thread stopped.
    ready: Condvar,
    /// Room for a batch, or the stream was dropped.
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The replay's end of a parser thread.
pub(super) struct Handoff {
    shared: Arc<Shared>,
    /// The rank file, for the error when the thread stops early.
    pub(super) path: PathBuf,
}

/// Marks the thread stopped when it ends, however it ends.
struct Stopped(Arc<Shared>);

impl Drop for Stopped {
    fn drop(&mut self) {
        let mut st = self.0.lock();
        st.stopped = true;
        let wake = st.replay_waits;
        drop(st);
        if wake {
            self.0.ready.notify_one();
        }
    }
}

/// Starts a thread parsing `src` in batches of `batch` actions; gives
/// `src` back when no thread can be started.
pub(super) fn spawn(src: Box<RankSource>, batch: usize) -> Result<Handoff, Box<RankSource>> {
    let shared = Arc::new(Shared::default());
    let path = src.path.clone();
    let slot = Arc::new(Mutex::new(Some(src)));
    let theirs = slot.clone();
    // Moved into the thread: dropped there when it ends, or here when it
    // cannot start.
    let stopped = Stopped(shared.clone());
    let started = std::thread::Builder::new().name("ti-parse".into()).stack_size(1 << 18).spawn(move || {
        let sh = &stopped.0;
        let Some(mut src) = theirs.lock().ok().and_then(|mut s| s.take()) else { return };
        loop {
            let mut actions = sh.lock().free.pop().unwrap_or_else(|| Vec::with_capacity(batch + 8));
            actions.clear();
            let end = match src.fill(&mut actions, batch) {
                Ok(false) => None,
                Ok(true) => Some(Ok(())),
                Err(e) => Some(Err(e)),
            };
            actions.reverse();
            let last = end.is_some();
            let mut st = sh.lock();
            while st.ready.len() >= AHEAD && !st.gone {
                st.parser_waits = true;
                st = sh.room.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            st.parser_waits = false;
            if st.gone {
                return;
            }
            st.ready.push_back(Batch { actions, end });
            let wake = st.replay_waits;
            drop(st);
            if wake {
                sh.ready.notify_one();
            }
            if last {
                return;
            }
        }
    });
    match started {
        Ok(_) => Ok(Handoff { shared, path }),
        Err(_) => match slot.lock().ok().and_then(|mut s| s.take()) {
            Some(src) => Err(src),
            // Marked stopped: the stream ends with an error.
            None => Ok(Handoff { shared, path }),
        },
    }
}

impl Handoff {
    /// The next batch, waiting for it; `used` (a replayed batch) goes back
    /// to the thread for reuse. `None` when the thread stopped without
    /// an end (a panic).
    pub(super) fn next(&mut self, used: Vec<Action>) -> Option<Batch> {
        let sh = &self.shared;
        let mut st = sh.lock();
        if used.capacity() > 0 {
            st.free.push(used);
        }
        loop {
            if let Some(b) = st.ready.pop_front() {
                st.replay_waits = false;
                let wake = st.parser_waits;
                drop(st);
                if wake {
                    sh.room.notify_one();
                }
                return Some(b);
            }
            if st.stopped {
                return None;
            }
            st.replay_waits = true;
            st = sh.ready.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }
}

impl Drop for Handoff {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        st.gone = true;
        st.ready.clear();
        drop(st);
        self.shared.room.notify_one();
    }
}
