//! PSA's extern methods as BMv2's psa_switch implements them (`targets/psa_switch/externs/`):
//! `Hash` (koi-hash's [`PsaHash`]: the data serialised right-aligned), `Checksum` and
//! `InternetChecksum` (a sum per packet, clear when it starts), `Random` (the seeded
//! generator), `Meter.execute` and `DirectMeter.execute` (RFC 2698 meters; the colours as
//! `PSA_MeterColor_t`'s codes RED 0, GREEN 1, YELLOW 2; a colour-aware call's input colour
//! is not used, as in psa_switch), `Digest.pack` (one digest message per call); and eBPF's
//! `CounterArray` (`increment`, `add`). Custom CRC parameters of PSA hashes and checksums are
//! BMv2's defaults (the control plane sets only v1model's).

use crate::exec::{Ctx, Pkt, Stop};
use crate::observer::{Observer, TmEvent};
use koi_hash::BitString;
use koi_hash::psa::{InternetChecksum, PsaHash, PsaHashAlgorithm};
use koi_ir::{Arg, Bits, Expr, ExternId, ExternKind};
use koi_state::DigestMessage;

/// A checksum unit's state for one packet.
#[derive(Clone, Debug)]
pub enum Unit {
    Internet(InternetChecksum),
    /// `Checksum`: the data given since the last `clear()`.
    Data(BitString),
}

/// A meter colour as `PSA_MeterColor_t`'s code.
fn psa_color(c: koi_state::Color) -> u64 {
    match c {
        koi_state::Color::Red => 0,
        koi_state::Color::Green => 1,
        koi_state::Color::Yellow => 2,
    }
}

fn algorithm(name: &str) -> PsaHashAlgorithm {
    PsaHashAlgorithm::from_name(name).unwrap_or(PsaHashAlgorithm::TargetDefault)
}

impl<O: Observer> Ctx<'_, O> {
    fn in_exprs(args: &[Arg]) -> Vec<Expr> {
        args.iter()
            .filter_map(|a| match a {
                Arg::In(e) => Some(e.clone()),
                _ => None,
            })
            .collect()
    }

    fn unit(pkt: &mut Pkt, inst: ExternId, fresh: impl FnOnce() -> Unit) -> &mut Unit {
        let i = match pkt.units.iter().position(|(e, _)| *e == inst) {
            Some(i) => i,
            None => {
                pkt.units.push((inst, fresh()));
                pkt.units.len() - 1
            }
        };
        &mut pkt.units[i].1
    }

    /// Runs a PSA or eBPF extern method: `Some(result)` if it is one, `None` otherwise.
    pub(crate) fn psa_extern(
        &mut self,
        pkt: &mut Pkt,
        inst: ExternId,
        method: &str,
        args: &[Arg],
        inputs: &[Bits],
        params: &[Bits],
    ) -> Result<Option<Option<Bits>>, Stop> {
        let Some(ext) = self.p.externs.get(inst) else {
            return Ok(None);
        };
        let idx = inputs.first().map_or(0, |b| b.low_u64());
        let now = self.now_ns();
        let kind = ext.kind.clone();
        let v = match (&kind, method) {
            (ExternKind::Hash { algo }, "get_hash") => {
                let data = self.data_bits(pkt, &Self::in_exprs(args), params, false);
                Some(Bits::from_u64(
                    64,
                    PsaHash::new(algorithm(algo)).compute(&data),
                ))
            }
            (ExternKind::Hash { algo }, "get_hash_mod") => {
                // (base, data..., max): the data is what lies between.
                let all = Self::in_exprs(args);
                if all.len() < 2 {
                    return Err(Stop::Abort("get_hash without its data".into()));
                }
                let base = inputs.first().map_or(0, |b| b.low_u64());
                let max = inputs.last().map_or(0, |b| b.low_u64());
                let data = self.data_bits(pkt, &all[1..all.len() - 1], params, false);
                let h = PsaHash::new(algorithm(algo)).compute(&data);
                let v = if max == 0 {
                    base
                } else {
                    base.wrapping_add(h % max)
                };
                Some(Bits::from_u64(64, v))
            }
            (ExternKind::Checksum { .. }, "clear") => {
                *Self::unit(pkt, inst, || Unit::Data(BitString::new())) =
                    Unit::Data(BitString::new());
                None
            }
            (ExternKind::Checksum { .. }, "update") => {
                let data = self.data_bits(pkt, &Self::in_exprs(args), params, false);
                if let Unit::Data(d) = Self::unit(pkt, inst, || Unit::Data(BitString::new())) {
                    d.push_bits(&data);
                }
                None
            }
            (ExternKind::Checksum { algo }, "get") => {
                let d = match Self::unit(pkt, inst, || Unit::Data(BitString::new())) {
                    Unit::Data(d) => d.clone(),
                    Unit::Internet(_) => BitString::new(),
                };
                Some(Bits::from_u64(
                    64,
                    PsaHash::new(algorithm(algo)).compute(&d),
                ))
            }
            (ExternKind::InternetChecksum, m) => {
                let data = matches!(m, "add" | "subtract")
                    .then(|| self.data_bits(pkt, &Self::in_exprs(args), params, false));
                let u = Self::unit(pkt, inst, || Unit::Internet(InternetChecksum::new()));
                if !matches!(u, Unit::Internet(_)) {
                    *u = Unit::Internet(InternetChecksum::new());
                }
                let Unit::Internet(ck) = u else {
                    return Ok(None);
                };
                match (m, data) {
                    ("clear", _) => ck.clear(),
                    ("add", Some(d)) => ck.add(&d),
                    ("subtract", Some(d)) => ck.subtract(&d),
                    ("set_state", _) => ck.set_state(idx as u16),
                    ("get", _) => return Ok(Some(Some(Bits::from_u64(16, u64::from(ck.get()))))),
                    ("get_state", _) => {
                        return Ok(Some(Some(Bits::from_u64(16, u64::from(ck.get_state())))));
                    }
                    _ => return Ok(None),
                }
                None
            }
            (ExternKind::Random { min, max }, "read") => {
                Some(Bits::from_u64(64, self.rng.range(*min, *max)))
            }
            (ExternKind::Meter { .. }, "execute") => self
                .state
                .execute_meter(inst, idx, pkt.ingress_len, now)
                .map(|c| Bits::from_u64(32, psa_color(c))),
            (ExternKind::DirectMeter { .. }, "execute") => {
                let code = pkt
                    .meter_colors
                    .iter()
                    .find(|(e, _)| *e == inst)
                    .map_or(0, |(_, c)| *c);
                let c = match code {
                    1 => koi_state::Color::Yellow,
                    2 => koi_state::Color::Red,
                    _ => koi_state::Color::Green,
                };
                Some(Bits::from_u64(32, psa_color(c)))
            }
            (ExternKind::Counter { .. }, "increment") => {
                self.state.count(inst, idx, pkt.ingress_len);
                None
            }
            (ExternKind::Counter { .. }, "add") => {
                let n = inputs.get(1).map_or(0, |b| b.low_u64());
                self.state.count_add(inst, idx, n);
                None
            }
            (ExternKind::Other, "pack") if ext.type_name == "Digest" => {
                self.psa_pack(pkt, inst, args, params);
                None
            }
            _ => return Ok(None),
        };
        Ok(Some(v))
    }

    /// `Digest.pack(data)`: a message of the digest named after the instance.
    fn psa_pack(&mut self, pkt: &Pkt, inst: ExternId, args: &[Arg], params: &[Bits]) {
        let Some(name) = self.p.externs.get(inst).map(|e| e.preamble.name.clone()) else {
            return;
        };
        let Some((d, dg)) = self.p.digests.iter().find(|(_, d)| d.preamble.name == name) else {
            return;
        };
        let env = self.env(pkt, params);
        let fields = dg
            .fields
            .iter()
            .zip(Self::in_exprs(args))
            .map(|((n, w), e)| (n.clone(), env.bits(&e).resize(*w)))
            .collect();
        let m = DigestMessage {
            digest: d,
            name: name.clone(),
            receiver: 0,
            fields,
        };
        self.obs.tm(&TmEvent::Digest { name });
        self.report.digests += 1;
        self.state.push_digest(m);
    }
}
