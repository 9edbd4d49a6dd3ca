//! The parameters of a program's custom CRC calculations (`crc16_custom`, `crc32_custom`):
//! each use of one is a calculation of its own ([`koi_ir::Calculation`], `calc_N`), which
//! starts as BMv2's (`crc16` is CRC-16/ARC, `crc32` is CRC-32/ISO-HDLC) and whose polynomial,
//! initial value, final XOR and reflections the control plane sets, as simple_switch_CLI's
//! `set_crc16_parameters` / `set_crc32_parameters` do. The hashes read the parameters here
//! per packet ([`State::custom_crc`]); a change flushes the flow caches like any write that
//! is not a table's.

use crate::error::{Result, StateError};
use crate::state::State;
use koi_hash::crc::{CRC16_ARC, CRC32_ISO_HDLC, Crc, CrcParams};
use koi_ir::Calculation;

/// Every custom CRC calculation of a program, by index.
#[derive(Clone, Debug, Default)]
pub struct Calcs {
    names: Vec<String>,
    crcs: Vec<Crc>,
}

/// BMv2's initial parameters of a custom CRC of `width` bits.
pub fn default_params(width: u32) -> CrcParams {
    if width == 16 {
        CRC16_ARC
    } else {
        CRC32_ISO_HDLC
    }
}

/// The CRC of parameters whose width is known to be 16 or 32.
fn crc(params: CrcParams) -> Crc {
    Crc::new(params).unwrap_or_else(|_| koi_hash::crc::CRC32.clone())
}

impl Calcs {
    /// The calculations of a program, each with BMv2's initial parameters.
    pub fn new(calcs: &[Calculation]) -> Calcs {
        Calcs {
            names: calcs.iter().map(|c| c.name.clone()).collect(),
            crcs: calcs.iter().map(|c| crc(default_params(c.width))).collect(),
        }
    }
}

impl State {
    /// The CRC of custom calculation `index` (as the program numbers them).
    #[inline]
    pub fn custom_crc(&self, index: u32) -> Option<&Crc> {
        self.calcs.crcs.get(index as usize)
    }

    /// Each custom calculation's name and current parameters.
    pub fn calculations(&self) -> impl Iterator<Item = (&str, &CrcParams)> {
        self.calcs
            .names
            .iter()
            .zip(&self.calcs.crcs)
            .map(|(n, c)| (n.as_str(), c.params()))
    }

    /// Sets the parameters of calculation `name`; `params.width` must be its width (16 for
    /// a `crc16_custom`, 32 for a `crc32_custom`).
    pub fn set_custom_crc(&mut self, name: &str, params: CrcParams) -> Result<()> {
        let i = self
            .calcs
            .names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| StateError::Unknown {
                kind: "calculation",
                name: name.to_string(),
            })?;
        let width = self.calcs.crcs[i].params().width;
        if params.width != width {
            return Err(StateError::Command(format!(
                "calculation {name} is a {width}-bit CRC, not a {}-bit one",
                params.width
            )));
        }
        let crc = Crc::new(params)
            .map_err(|e| StateError::Command(format!("calculation {name}: {e:?}")))?;
        self.calcs.crcs[i] = crc;
        Ok(())
    }

    /// Makes this state's calculations `other`'s (a replica following its master).
    pub(crate) fn follow_calcs(&mut self, other: &State) {
        self.calcs.clone_from(&other.calcs);
    }

    /// Takes over the parameters of `old`'s calculations of the same name and width (a
    /// program swapped with its state).
    pub fn carry_calcs(&mut self, old: &State) {
        for (name, params) in old.calculations() {
            if let Some(i) = self.calcs.names.iter().position(|n| n == name)
                && self.calcs.crcs[i].params().width == params.width
            {
                self.calcs.crcs[i] = crc(*params);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calc(name: &str, width: u32) -> Calculation {
        Calculation {
            name: name.into(),
            width,
            block: "MyIngress".into(),
            used_by: "hash".into(),
        }
    }

    #[test]
    fn calculations_start_as_bmv2s_and_take_new_parameters() {
        let mut p = koi_ir::Pipeline::new(koi_ir::Architecture::V1Model);
        p.calculations = vec![calc("calc_0", 16), calc("calc_1", 32)];
        let mut s = State::new(&p).unwrap();
        assert_eq!(s.custom_crc(0).unwrap().checksum(b"123456789"), 0xBB3D);
        assert_eq!(s.custom_crc(1).unwrap().checksum(b"123456789"), 0xCBF4_3926);
        let xmodem = koi_hash::crc::CRC16_XMODEM;
        s.set_custom_crc("calc_0", xmodem).unwrap();
        assert_eq!(s.custom_crc(0).unwrap().checksum(b"123456789"), 0x31C3);
        // The width must be the calculation's; an unknown name is refused.
        assert!(s.set_custom_crc("calc_1", xmodem).is_err());
        assert!(s.set_custom_crc("calc_9", xmodem).is_err());
        assert_eq!(s.custom_crc(1).unwrap().checksum(b"123456789"), 0xCBF4_3926);
        // A new state of the same program takes the parameters over.
        let mut fresh = State::new(&p).unwrap();
        fresh.carry_calcs(&s);
        assert_eq!(fresh.custom_crc(0).unwrap().checksum(b"123456789"), 0x31C3);
    }
}
