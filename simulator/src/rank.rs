//! Rules of one rank's model that both drivers apply, the replay engine
//! ([`crate::replay`], N ranks, matching and an event queue) and online
//! mode ([`crate::online`], one rank, the facts its shadow protocol
//! brings): when a matched point-to-point message completes, and how a
//! blocking wait splits into communication and waiting. The other shared
//! rules live with their models: copy lanes ([`crate::network::lane`]),
//! one-sided costs ([`crate::network::rma`]), pstates ([`crate::dvfs`]),
//! MPI-IO ([`crate::io::client`]).

use crate::network::P2pModel;

/// A blocking wait: the rank blocked at `since` and resumes at `resume`,
/// `d` the longest model duration among the operations it awaited,
/// seconds.
///
/// Accounting rule ([`Wait::split`]): of the `w = resume − since` seconds
/// blocked, `min(w, d)` are communication and the rest waiting for a late
/// partner.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Wait {
    /// When the rank blocked, seconds.
    pub since: f64,
    /// When it resumes, seconds (`≥ since` once its operations are added).
    pub resume: f64,
    /// Longest model duration awaited, seconds.
    pub d: f64,
}

impl Wait {
    /// A wait that starts at `t_s` and awaits nothing yet.
    pub fn at(t_s: f64) -> Wait {
        Wait { since: t_s, resume: t_s, d: 0.0 }
    }

    /// An awaited operation completes at `at_s` after a model duration of `d_s`.
    pub fn add(&mut self, at_s: f64, d_s: f64) {
        self.resume = self.resume.max(at_s);
        self.d = self.d.max(d_s);
    }

    /// `(communication, waiting)` seconds of the wait (rule on [`Wait`]).
    pub fn split(&self) -> (f64, f64) {
        let w = self.resume - self.since;
        let comm = w.min(self.d).max(0.0);
        (comm, w - comm)
    }
}

/// When a message of `bytes` posted at `post` (eager or not) completes
/// the receive posted at `recv_post`, on a network without shared links,
/// and its transfer part, seconds ([`P2pModel`]'s semantics): eager,
/// `max(start + transfer, recv_post + o_r)` with `o_r` the receiver's
/// overhead and `start` the send (or, at or above SMPI's
/// `async-small-thresh` `async_th`, when both sides have posted);
/// rendezvous, both sides end at `max(post, recv_post) + transfer`.
pub fn arrival(model: &P2pModel, async_th: Option<u64>, (bytes, post, eager): (u64, f64, bool), recv_post: f64, o_r: f64) -> (f64, f64) {
    arrival_after(model.transfer.eval(bytes), async_th, (bytes, post, eager), recv_post, o_r)
}

/// [`arrival`] with the message's transfer time `t` (seconds) already
/// taken from its model.
pub fn arrival_after(t: f64, async_th: Option<u64>, (bytes, post, eager): (u64, f64, bool), recv_post: f64, o_r: f64) -> (f64, f64) {
    if !eager {
        return (post.max(recv_post) + t, t);
    }
    let start = match async_th {
        Some(th) if bytes >= th => post.max(recv_post),
        _ => post,
    };
    ((start + t).max(recv_post + o_r), t.max(o_r))
}
