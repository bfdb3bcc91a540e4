//! The deadlock report: which ranks are blocked and on what.

use super::*;

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// The deadlock error: up to four blocked ranks and what they wait for.
    pub(super) fn deadlock(&self) -> ReplayError {
        let stuck: Vec<usize> = (0..self.ranks.len()).filter(|&r| self.ranks[r].status != Status::Done).collect();
        let mut parts = Vec::new();
        for &r in stuck.iter().take(4) {
            let rk = &self.ranks[r];
            let mut waits = Vec::new();
            for mb in rk.mail.iter() {
                for p in self.mail.posted(r as u32, mb) {
                    let src = if p.src == ANY_SOURCE { "any".to_string() } else { p.src.to_string() };
                    let tag = if p.tag == ANY_TAG { "any".to_string() } else { p.tag.to_string() };
                    waits.push(format!("recv from {src} tag {tag} on {}", ctx_name(mb.ctx)));
                }
            }
            for (dst, other) in self.ranks.iter().enumerate() {
                for mb in other.mail.iter() {
                    for m in self.mail.unexpected(dst as u32, mb).iter().filter(|m| m.src as usize == r && !m.eager) {
                        waits.push(format!("rendezvous send of {} B to {dst} tag {} on {}", m.bytes, m.tag, ctx_name(mb.ctx)));
                    }
                }
            }
            let more = waits.len().saturating_sub(3);
            waits.truncate(3);
            if more > 0 {
                waits.push(format!("{more} more"));
            }
            let what = if waits.is_empty() { "no unmatched operation".to_string() } else { waits.join(", ") };
            parts.push(format!("rank {r} at t={:.9} s in {} waits for {what}", rk.block.wait.since, rk.doing));
        }
        if stuck.len() > 4 {
            parts.push(format!("and {} more", stuck.len() - 4));
        }
        let kind = ReplayErrorKind::Deadlock { blocked: stuck.len(), ranks: self.ranks.len(), detail: parts.join("; ") };
        ReplayError { rank: None, kind }
    }

    /// The error of a replay whose ranks all finished with sends never
    /// received (an erroneous program or an incomplete trace): how many,
    /// and up to three of them; `None` when every send was matched.
    pub(super) fn unmatched(&self) -> Option<ReplayError> {
        let mut count = 0usize;
        let mut parts = Vec::new();
        for (dst, rk) in self.ranks.iter().enumerate() {
            for mb in rk.mail.iter() {
                for m in &self.mail.unexpected(dst as u32, mb) {
                    count += 1;
                    if parts.len() < 3 {
                        let mode = if m.eager { "eager" } else { "rendezvous" };
                        parts.push(format!(
                            "{mode} send of {} B from {} to {dst} tag {} on {} at t={:.9} s",
                            m.bytes,
                            m.src,
                            m.tag,
                            ctx_name(mb.ctx),
                            m.post
                        ));
                    }
                }
            }
        }
        if count == 0 {
            return None;
        }
        if count > 3 {
            parts.push(format!("{} more", count - 3));
        }
        Some(ReplayError { rank: None, kind: ReplayErrorKind::Unmatched { count, detail: parts.join("; ") } })
    }
}
