//! Two-rate three-colour meters (RFC 2698) as BMv2 implements them (`src/bm_sim/meters.cpp`).
//!
//! A meter is configured with two (rate, burst) pairs, committed first then peak, rates in
//! bytes or packets per microsecond as simple_switch_CLI takes them (`meter_set_rates m 0
//! CIR:CBS PIR:PBS`); the committed rate may not exceed the peak rate. Each bucket starts full.
//! At each execution the buckets are refilled with `floor(microseconds since the origin *
//! rate)` tokens minus those already credited, capped at the burst; then the peak bucket is
//! tested first: too few tokens gives red (2) and nothing is taken; otherwise the packet's
//! tokens are taken and the committed bucket is tested: too few gives yellow (1), else its
//! tokens are taken too and the colour is green (0). An unconfigured meter gives green. The
//! tokens of a packet are 1 for a packets meter, its length in bytes for a bytes meter.

use koi_ir::MeterUnit;

/// v1model's colours: `V1MODEL_METER_COLOR_GREEN` 0, `_YELLOW` 1, `_RED` 2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Color {
    Green = 0,
    Yellow = 1,
    Red = 2,
}

impl Color {
    pub fn code(self) -> u64 {
        self as u64
    }
}

/// One (rate, burst) pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeterRate {
    /// Tokens (bytes or packets) per microsecond.
    pub rate: f64,
    /// Bucket size in tokens.
    pub burst: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Bucket {
    rate: f64,
    burst: u64,
    tokens: u64,
    /// Tokens credited since the origin so far.
    credited: u64,
    color: Color,
}

impl Bucket {
    fn new(r: MeterRate, color: Color) -> Bucket {
        Bucket {
            rate: r.rate,
            burst: r.burst,
            tokens: r.burst,
            credited: 0,
            color,
        }
    }

    fn refill(&mut self, micros: u64) {
        let since_origin = (micros as f64 * self.rate) as u64;
        let new = since_origin.saturating_sub(self.credited);
        self.credited = self.credited.max(since_origin);
        self.tokens = self.tokens.saturating_add(new).min(self.burst);
    }
}

/// One meter: unconfigured, or a peak and a committed bucket.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Meter {
    /// `[peak, committed]`: tested in this order.
    buckets: Option<[Bucket; 2]>,
}

impl Meter {
    /// Configures the meter with `[committed, peak]` rates. Refused when the committed rate
    /// is above the peak rate or the rates are not finite and non-negative.
    pub fn set_rates(&mut self, rates: &[MeterRate]) -> Result<(), String> {
        let [cir, pir] = rates else {
            return Err(format!("needs 2 RATE:BURST pairs, got {}", rates.len()));
        };
        if !(cir.rate.is_finite() && pir.rate.is_finite() && cir.rate >= 0.0 && pir.rate >= 0.0) {
            return Err("rates must be finite and not negative".into());
        }
        if cir.rate > pir.rate {
            return Err("the committed rate is above the peak rate".into());
        }
        self.buckets = Some([
            Bucket::new(*pir, Color::Red),
            Bucket::new(*cir, Color::Yellow),
        ]);
        Ok(())
    }

    /// The configured `[committed, peak]` rates, if any.
    pub fn rates(&self) -> Option<[MeterRate; 2]> {
        let [p, c] = self.buckets.as_ref()?;
        let r = |b: &Bucket| MeterRate {
            rate: b.rate,
            burst: b.burst,
        };
        Some([r(c), r(p)])
    }

    /// Back to unconfigured (green).
    pub fn reset(&mut self) {
        self.buckets = None;
    }

    /// Marks a packet of `tokens` tokens at time `now_ns`.
    pub fn execute(&mut self, now_ns: u64, tokens: u64) -> Color {
        let Some(buckets) = self.buckets.as_mut() else {
            return Color::Green;
        };
        let micros = now_ns / 1000;
        for b in buckets.iter_mut() {
            b.refill(micros);
            if b.tokens < tokens {
                return b.color;
            }
            b.tokens -= tokens;
        }
        Color::Green
    }
}

/// The tokens a packet of `len` bytes takes from a meter of `unit`.
pub fn tokens(unit: MeterUnit, len: usize) -> u64 {
    match unit {
        MeterUnit::Packets => 1,
        MeterUnit::Bytes => len as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(rate: f64, burst: u64) -> MeterRate {
        MeterRate { rate, burst }
    }

    #[test]
    fn unconfigured_meters_are_green() {
        let mut m = Meter::default();
        assert_eq!(m.execute(0, 1), Color::Green);
        assert_eq!(m.rates(), None);
    }

    #[test]
    fn colours_follow_rfc_2698_over_time() {
        // Committed 0.25 packet per microsecond (burst 1), peak 0.5 (burst 2).
        let mut m = Meter::default();
        m.set_rates(&[rate(0.25, 1), rate(0.5, 2)]).unwrap();
        assert_eq!(m.execute(0, 1), Color::Green);
        assert_eq!(m.execute(0, 1), Color::Yellow);
        assert_eq!(m.execute(0, 1), Color::Red);
        // 2 us later: one peak token, half a committed token (none usable).
        assert_eq!(m.execute(2_000, 1), Color::Yellow);
        assert_eq!(m.execute(2_000, 1), Color::Red);
        // 4 us after the start: a committed token and a peak token are back.
        assert_eq!(m.execute(4_000, 1), Color::Green);
        // Long idle: buckets refill only up to their bursts.
        assert_eq!(m.execute(100_000_000, 1), Color::Green);
        assert_eq!(m.execute(100_000_000, 1), Color::Yellow);
        assert_eq!(m.execute(100_000_000, 1), Color::Red);
        assert_eq!(m.rates(), Some([rate(0.25, 1), rate(0.5, 2)]));
        m.reset();
        assert_eq!(m.execute(0, 1), Color::Green);
    }

    #[test]
    fn bad_rates_are_refused_and_change_nothing() {
        let mut m = Meter::default();
        assert!(m.set_rates(&[rate(2.0, 1), rate(1.0, 1)]).is_err());
        assert!(m.set_rates(&[rate(1.0, 1)]).is_err());
        assert!(m.set_rates(&[rate(f64::NAN, 1), rate(1.0, 1)]).is_err());
        assert_eq!(m, Meter::default());
        // A clock going backwards takes no tokens away and adds none.
        m.set_rates(&[rate(1.0, 10), rate(1.0, 10)]).unwrap();
        assert_eq!(m.execute(5_000_000, 10), Color::Green);
        assert_eq!(m.execute(1_000, 1), Color::Red);
        assert_eq!(tokens(MeterUnit::Bytes, 64), 64);
        assert_eq!(tokens(MeterUnit::Packets, 64), 1);
    }
}
