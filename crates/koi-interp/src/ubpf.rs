//! The uBPF architecture as p4c's uBPF back end compiles it and its test harness runs it
//! (`backends/ubpf/ubpfProgram.cpp`, `ubpfDeparser.cpp`, `runtime/ubpf_test.h`).
//!
//! `standard_metadata` starts zeroed with `input_port` and `packet_length` set, so
//! `output_port` is 0 unless the program sets it. A packet the parser rejects (an explicit
//! `reject` or an error) skips the pipeline and leaves unchanged on `output_port` (the
//! program returns "abort", which the harness treats as pass). Otherwise the pipeline runs,
//! then the deparser as p4c generates it: the emitted headers' total length replaces the
//! parsed bytes at the front of the packet (`ubpf_adjust_head` by `BYTES(emitted) -
//! BYTES(parsed)`), then a `truncate` length above 0 cuts the packet, then each valid header
//! is written in order at the next offset if it fits; the first one that does not fit stops
//! the deparser and the packet is passed as it is (the generated code jumps to `reject`).
//! Finally the packet leaves on `output_port` unless `mark_to_drop` (and no later
//! `mark_to_pass`) dropped it.

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{InstanceEvent, Observer, TmEvent};
use crate::options::{DropReason, Output};
use crate::parse::ParseEnd;
use crate::phv::BitWriter;
use koi_ir::{Bits, Role};

impl<O: Observer> Ctx<'_, O> {
    /// Processes one packet received on `port`.
    pub fn run_ubpf(
        &mut self,
        data: &[u8],
        port: u64,
    ) -> Result<Vec<Output>, (Vec<Output>, String)> {
        let mut pkt = Pkt::new(self.p, data.to_vec());
        let i = self.prep.intr.clone();
        for (s, v) in [(i.input_port, port), (i.packet_length, data.len() as u64)] {
            if let Some(s) = s {
                pkt.phv.set_raw(self.p, s, &Bits::from_u64(64, v));
            }
        }
        let ev = InstanceEvent {
            instance_type: 0,
            egress_port: None,
            rid: None,
            packet_path: None,
        };
        self.obs.instance(Role::Pipe, &ev);
        let b = self.prep.blocks.clone();
        let end = self.run_parser(&mut pkt, b.parser);
        self.obs.parsed(pkt.phv.bytes());
        match end {
            ParseEnd::Accept => self.obs.parser_end(None),
            ParseEnd::Abort(why) => return Err((Vec::new(), why)),
            ParseEnd::Reject | ParseEnd::Error(_) | ParseEnd::NoMatch => {
                self.obs.parser_end(Some("reject"));
                return Ok(vec![self.send(&pkt, data.to_vec())]);
            }
        }
        if let Err(Stop::Abort(why)) = self.run_control(&mut pkt, b.ingress, Role::Pipe) {
            return Err((Vec::new(), why));
        }
        let (bytes, complete) = match self.ubpf_deparse(&mut pkt, b.deparser) {
            Ok(x) => x,
            Err(Stop::Abort(why)) => return Err((Vec::new(), why)),
            Err(_) => (data.to_vec(), false),
        };
        if complete && pkt.fx.ubpf_drop {
            self.obs.tm(&TmEvent::Drop(DropReason::Ubpf));
            self.report.drops.push(DropReason::Ubpf);
            return Ok(Vec::new());
        }
        Ok(vec![self.send(&pkt, bytes)])
    }

    fn send(&mut self, pkt: &Pkt, bytes: Vec<u8>) -> Output {
        let port = self
            .prep
            .intr
            .output_port
            .map_or(0, |s| pkt.phv.raw(self.p, s).to_u64().unwrap_or(0));
        self.obs.tm(&TmEvent::Unicast { port });
        let o = Output { port, bytes };
        self.obs.packet_out(&o);
        o
    }

    /// The deparsed packet, and whether every emitted header fit.
    fn ubpf_deparse(
        &mut self,
        pkt: &mut Pkt,
        d: koi_ir::ControlId,
    ) -> Result<(Vec<u8>, bool), Stop> {
        pkt.emit = Some(BitWriter::new());
        self.run_control(pkt, d, Role::Deparser)?;
        let w = pkt.emit.take().unwrap_or_default();
        let emitted = w.len_bits() / 8;
        let parsed = pkt.cursor / 8;
        let mut buf = pkt.data.clone();
        if emitted >= parsed {
            let mut grown = vec![0u8; emitted - parsed];
            grown.extend_from_slice(&buf);
            buf = grown;
        } else {
            buf.drain(..(parsed - emitted).min(buf.len()));
        }
        if let Some(t) = pkt.truncate.filter(|t| *t > 0) {
            // Whether the headers fit the cut packet depends on its length: a megaflow of
            // this run is only valid for packets at least as long.
            if O::TRACKS_READS {
                self.obs
                    .packet_length_check((pkt.data.len() as u64).saturating_mul(8), true);
            }
            buf.truncate(usize::try_from(t).unwrap_or(usize::MAX));
        }
        let mut offset = 0usize;
        for i in 0..w.chunks.len() {
            let Some(h) = w.chunk(i) else {
                continue;
            };
            let end = offset + h.width() as usize;
            if buf.len() < end / 8 || h.write_bits(&mut buf, offset).is_err() {
                return Ok((buf, false));
            }
            offset = end;
        }
        Ok((buf, true))
    }
}
