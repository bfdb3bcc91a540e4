//! Point-to-point in the engine: posting sends (eager, rendezvous,
//! buffered) and receives, matching them, and the receive overhead.

use super::*;

impl<'a, 'p, E: std::error::Error + Send + Sync + 'static> Engine<'a, 'p, E> {
    /// Posts a send from `r` to `dst` at `r`'s clock. Eager: `r` is busy
    /// `send_overhead` and `slot` (if any) completes after it. Rendezvous:
    /// `slot` completes when the transfer ends.
    pub(super) fn isend(&mut self, r: usize, dst: usize, ctx: u64, tag: i32, bytes: u64, slot: u32) -> Result<(), ReplayError> {
        self.post_send(r, dst, ctx, tag, bytes, slot, false)
    }

    /// [`Self::isend`]; `buffered`: eager whatever the size (`MPI_Bsend`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn post_send(
        &mut self,
        r: usize,
        dst: usize,
        ctx: u64,
        tag: i32,
        bytes: u64,
        slot: u32,
        buffered: bool,
    ) -> Result<(), ReplayError> {
        let model = self.model(r, dst);
        let eager = buffered || model.is_eager(bytes);
        let rk = &mut self.ranks[r];
        rk.stats.messages += 1;
        rk.stats.bytes_sent = rk.stats.bytes_sent.saturating_add(bytes);
        let msg = SendMsg { src: r as u32, tag, bytes, post: rk.clock, eager, slot: if eager { NO_SLOT } else { slot }, seq: 0 };
        let mb = self.ranks[dst].mail.get(ctx);
        match self.mail.match_send(dst as u32, mb, msg.src, tag) {
            Some(recv) => self.matched(dst, msg, recv)?,
            None => self.mail.push_send(dst as u32, mb, msg),
        }
        if eager {
            let o = model.send_overhead.eval(bytes);
            // The sender's CPU time of an eager send meets OS jitter too.
            let o = match self.jitter.as_mut() {
                Some(stretch) => stretch(r, self.ranks[r].clock, o),
                None => o,
            };
            let rk = &mut self.ranks[r];
            rk.clock += o;
            rk.stats.comm_s += o;
            if slot != NO_SLOT {
                let at = rk.clock;
                self.complete(r, slot, at, 0.0)?;
            }
        }
        Ok(())
    }

    /// Posts a receive on `r` at its clock, matching the earliest-posted
    /// unmatched send from `src` (or any) with `tag` (or any).
    pub(super) fn irecv(&mut self, r: usize, src: i32, ctx: u64, tag: i32, slot: u32) -> Result<(), ReplayError> {
        let recv = RecvPost { src, tag, post: self.ranks[r].clock, slot, seq: 0 };
        let mb = self.ranks[r].mail.get(ctx);
        match self.mail.take_send(r as u32, mb, src, tag) {
            Some(msg) => self.matched(r, msg, recv),
            None => {
                self.mail.post_recv(r as u32, mb, recv);
                Ok(())
            }
        }
    }

    /// Completion times of a matched pair, per [`P2pModel`]'s semantics.
    /// The cost uses the sender's size.
    pub(super) fn matched(&mut self, dst: usize, msg: SendMsg, recv: RecvPost) -> Result<(), ReplayError> {
        let model = self.model(msg.src as usize, dst);
        let (ha, hb) = (self.hosts[msg.src as usize] as usize, self.hosts[dst] as usize);
        let start = msg.post.max(recv.post);
        let shared_start = match self.platform.smpi.async_small_thresh_bytes {
            Some(th) => !msg.eager || msg.bytes >= th,
            None => !msg.eager,
        };
        if ha == hb && !msg.eager && self.lanes.is_some() {
            if let Some(turn) = self.platform.network.receive_turn(model, true, msg.bytes, start) {
                let t = model.transfer.eval(msg.bytes);
                self.turn_matched(dst, recv.slot, turn)?;
                return self.complete(msg.src as usize, msg.slot, start + t, t);
            }
        }
        let recv_links = self.recv_links.filter(|_| self.platform.network.serial_receive(msg.bytes));
        if ha == hb && !msg.eager && start >= self.queue.now && (self.copy_links.is_some() || recv_links.is_some()) {
            if let Some(seg) = model.transfer.segment(msg.bytes) {
                let hosts = self.platform.hosts.len();
                let net = self.net.as_mut().expect("copy links are links of the net");
                let host = self.copy_links.map(|k0| net.extra_link(hosts, k0 + ha).0);
                let receiver = recv_links.map(|k0| net.extra_link(hosts, k0 + dst).0);
                let done = Done { dst: dst as u32, recv_slot: recv.slot, recv_ready: 0.0, src: msg.src, send_slot: msg.slot, start };
                let (lat, bound) = seg.alone_phases(msg.bytes);
                let lat_end = net.start_local(start + lat, [host, receiver], msg.bytes, bound, done);
                return self.net_wake(lat_end);
            }
        }
        if ha != hb && shared_start && start >= self.queue.now && self.links {
            if let Some(seg) = model.transfer.segment(msg.bytes) {
                let recv_ready = if msg.eager { recv.post + self.recv_overhead(dst, recv.post, model, msg.bytes) } else { 0.0 };
                let net = self.net.as_mut().expect("checked above");
                let (lat, bound) = net.phases(seg);
                let done = Done { dst: dst as u32, recv_slot: recv.slot, recv_ready, src: msg.src, send_slot: msg.slot, start };
                // The transfer needs the network's attention when its
                // latency is over (it uses no bandwidth before).
                let lat_end = net.start(start, (ha, hb), msg.bytes, (lat, bound), done);
                return self.net_wake(lat_end);
            }
        }
        let o_r = if msg.eager { self.recv_overhead(dst, recv.post, model, msg.bytes) } else { 0.0 };
        let (done, d) =
            crate::rank::arrival(model, self.platform.smpi.async_small_thresh_bytes, (msg.bytes, msg.post, msg.eager), recv.post, o_r);
        self.complete(dst, recv.slot, done, d)?;
        if msg.eager {
            Ok(())
        } else {
            self.complete(msg.src as usize, msg.slot, done, d)
        }
    }

    /// The receiver's CPU time `o_r` of an eager message of `bytes` on rank
    /// `dst`, spent from the receive's post time `post` (the model's
    /// `done = max(arrival, post + o_r)`), and exposed to OS jitter like a
    /// compute block that starts at `post`. `post` may lie before the
    /// rank's clock (an `Irecv` matched later): the jitter cursor seeks
    /// back (O(log events)), so each overhead meets the jitter of its own
    /// interval.
    pub(super) fn recv_overhead(&mut self, dst: usize, post: f64, model: &P2pModel, bytes: u64) -> f64 {
        let o_r = model.recv_overhead.eval(bytes);
        match self.jitter.as_mut() {
            Some(stretch) if o_r > 0.0 => stretch(dst, post, o_r),
            _ => o_r,
        }
    }
}
