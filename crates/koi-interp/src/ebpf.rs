//! p4c's eBPF back end's two models: `ebpfFilter` (ebpf_model.p4) as its test target runs it
//! (`backends/ebpf/runtime/ebpf_runtime_test.c`: a filter accepts or drops the packet, which
//! leaves unchanged on its input port) and `xdp` (xdp_model.p4).
//!
//! **ebpfFilter.** The parser runs; a packet it rejects (an explicit `reject`, a `select`
//! without a match, an error) is dropped. Otherwise the filter runs with `accept` false; an
//! accepted packet leaves, unchanged (the model has no deparser), on the port it came in on.
//!
//! **xdp.** The parser runs (a rejected packet is dropped, as p4c's XDP code returns
//! `XDP_DROP`); the switch control runs with `imd.input_port` set (before the parse: the
//! parser cannot see it) and `omd` 0 (`XDP_ABORTED`); the deparser's emitted headers, followed by the unparsed payload, are
//! the packet; then `omd.output_action` decides: `XDP_PASS` hands the packet up its input
//! interface (koi has no host stack: it leaves on the input port, where p4c's kernel test
//! captures it), `XDP_TX` sends it back out of the input port, `XDP_REDIRECT` to
//! `omd.output_port`, `XDP_DROP` and `XDP_ABORTED` drop it.

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{InstanceEvent, Observer, TmEvent};
use crate::options::{DropReason, Output};
use crate::parse::ParseEnd;
use koi_ir::{Bits, Role};

/// `xdp_action`'s members, in declaration order.
pub const XDP_PASS: u64 = 2;
pub const XDP_TX: u64 = 3;
pub const XDP_REDIRECT: u64 = 4;

impl<O: Observer> Ctx<'_, O> {
    /// Runs the parser; false (and a drop) if it rejects the packet.
    fn bpf_parse(&mut self, pkt: &mut Pkt) -> Result<bool, Stop> {
        let b = self.prep.blocks.clone();
        let end = self.run_parser(pkt, b.parser);
        self.obs.parsed(pkt.phv.bytes());
        match end {
            ParseEnd::Accept => {
                self.obs.parser_end(None);
                Ok(true)
            }
            ParseEnd::Abort(why) => Err(Stop::Abort(why)),
            ParseEnd::Reject | ParseEnd::Error(_) | ParseEnd::NoMatch => {
                self.obs.parser_end(Some("reject"));
                self.bpf_drop();
                Ok(false)
            }
        }
    }

    fn bpf_drop(&mut self) {
        self.obs.tm(&TmEvent::Drop(DropReason::Filter));
        self.report.drops.push(DropReason::Filter);
    }

    fn bpf_send(&mut self, port: u64, bytes: Vec<u8>) -> Vec<Output> {
        self.obs.tm(&TmEvent::Unicast { port });
        let o = Output { port, bytes };
        self.obs.packet_out(&o);
        vec![o]
    }

    fn bpf_start(&mut self, pkt: &mut Pkt) {
        let ev = InstanceEvent {
            instance_type: 0,
            egress_port: None,
            rid: None,
            packet_path: None,
        };
        self.obs.instance(Role::Pipe, &ev);
        let _ = pkt;
    }

    /// Processes one packet received on `port` through an `ebpfFilter` program.
    pub fn run_ebpf(
        &mut self,
        data: &[u8],
        port: u64,
    ) -> Result<Vec<Output>, (Vec<Output>, String)> {
        let mut pkt = Pkt::new(self.p, data.to_vec());
        self.bpf_start(&mut pkt);
        // The port the filter sends an accepted packet back out of, in a slot no block sees,
        // set before the parser so that the PHV the cached datapath takes its flow key from
        // holds it.
        if let Some(s) = self.p.intrinsic("input_port") {
            pkt.phv.set_raw(self.p, s, &Bits::from_u64(32, port));
        }
        let r = (|| -> Result<Vec<Output>, Stop> {
            if !self.bpf_parse(&mut pkt)? {
                return Ok(Vec::new());
            }
            let b = self.prep.blocks.clone();
            self.run_control(&mut pkt, b.ingress, Role::Pipe)?;
            let accept = self.p.intrinsic("accept");
            if accept.is_some_and(|s| pkt.phv.raw(self.p, s).low_u64() != 0) {
                return Ok(self.bpf_send(port, data.to_vec()));
            }
            self.bpf_drop();
            Ok(Vec::new())
        })();
        r.map_err(|e| (Vec::new(), stop_text(e)))
    }

    /// Processes one packet received on `port` through an `xdp` program.
    pub fn run_xdp(
        &mut self,
        data: &[u8],
        port: u64,
    ) -> Result<Vec<Output>, (Vec<Output>, String)> {
        let mut pkt = Pkt::new(self.p, data.to_vec());
        self.bpf_start(&mut pkt);
        // The switch control's `imd.input_port`, set before the parser (which cannot see
        // it), so that the PHV at the end of the parse holds it (the cached datapath takes
        // its flow key from there).
        if let Some(s) = self.p.intrinsic("imd.input_port") {
            let w = self.p.phv.slots.get(s).map_or(32, |s| s.width);
            pkt.phv.set_raw(self.p, s, &Bits::from_u64(w, port));
        }
        let r = (|| -> Result<Vec<Output>, Stop> {
            if !self.bpf_parse(&mut pkt)? {
                return Ok(Vec::new());
            }
            let b = self.prep.blocks.clone();
            self.run_control(&mut pkt, b.ingress, Role::Pipe)?;
            let bytes = self.deparse(&mut pkt, b.deparser)?;
            let get = |n: &str| {
                self.p
                    .intrinsic(n)
                    .map_or(0, |s| pkt.phv.raw(self.p, s).low_u64())
            };
            let (action, out_port) = (get("omd.output_action"), get("omd.output_port"));
            match action {
                XDP_PASS | XDP_TX => Ok(self.bpf_send(port, bytes)),
                XDP_REDIRECT => Ok(self.bpf_send(out_port, bytes)),
                _ => {
                    self.bpf_drop();
                    Ok(Vec::new())
                }
            }
        })();
        r.map_err(|e| (Vec::new(), stop_text(e)))
    }
}

fn stop_text(e: Stop) -> String {
    match e {
        Stop::Abort(why) => why,
        Stop::Exit => "exit".into(),
        Stop::Reject(c) => format!("reject {c}"),
    }
}
